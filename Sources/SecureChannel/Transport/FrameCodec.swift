import NIOCore

extension SecureChannel {
    /// Splits the byte stream into frames: a 2-byte big-endian length, then that many bytes (one
    /// Noise message). `frameTooLarge` above the limit, `emptyFrame` for length zero,
    /// `truncatedFrame` when the stream ends inside a frame.
    struct FrameDecoder: ByteToMessageDecoder {
        typealias InboundOut = ByteBuffer
        let maxFrameLength: Int

        mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
            guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self).map(Int.init) else {
                return .needMoreData
            }
            guard length > 0 else { throw SecureChannelError.emptyFrame }
            guard length <= maxFrameLength else { throw SecureChannelError.frameTooLarge(length: length, limit: maxFrameLength) }
            guard buffer.readableBytes >= 2 + length else { return .needMoreData }
            buffer.moveReaderIndex(forwardBy: 2)
            context.fireChannelRead(wrapInboundOut(buffer.readSlice(length: length)!))
            return .continue
        }

        mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
            -> DecodingState
        {
            while try decode(context: context, buffer: &buffer) == .continue {}
            if buffer.readableBytes > 0 { throw SecureChannelError.truncatedFrame }
            return .needMoreData
        }
    }

    /// Writes frames: each Noise message (at most 65,535 bytes) after its 2-byte big-endian length.
    enum FrameEncoder {
        /// The bytes one frame takes on the wire besides its message: the length.
        static let headerLength = 2
        /// The most bytes one frame takes on the wire.
        static let maxFrameByteCount = headerLength + Noise.maxMessageLength

        /// `message` as one frame, in a new buffer of exactly the frame's size.
        static func frame(_ message: some Collection<UInt8>, allocator: ByteBufferAllocator) throws(SecureChannelError)
            -> ByteBuffer
        {
            guard message.count <= Noise.maxMessageLength else { throw .noise(.messageTooLong(message.count)) }
            var buffer = allocator.buffer(capacity: headerLength + message.count)
            buffer.writeInteger(UInt16(message.count))
            buffer.writeBytes(message)
            return buffer
        }
    }
}
