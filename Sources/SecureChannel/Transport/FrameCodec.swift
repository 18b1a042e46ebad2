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

    /// Prefixes each outgoing Noise message (at most 65,535 bytes) with its 2-byte big-endian length.
    struct FrameEncoder: MessageToByteEncoder {
        typealias OutboundIn = ByteBuffer

        func encode(data: ByteBuffer, out: inout ByteBuffer) throws {
            guard data.readableBytes <= Noise.maxMessageLength else {
                throw SecureChannelError.noise(.messageTooLong(data.readableBytes))
            }
            out.writeInteger(UInt16(data.readableBytes))
            out.writeImmutableBuffer(data)
        }
    }
}
