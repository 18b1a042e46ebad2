import NIOCore

extension SecureChannel {
    /// Splits the byte stream into frames: a 2-byte big-endian length, then that many bytes (one
    /// Noise message). `frameTooLarge` above the limit (as soon as the length is read),
    /// `emptyFrame` for length zero, `truncatedFrame` when the stream ends inside a frame; any of
    /// them is raised in the pipeline, closes the connection and stops decoding.
    ///
    /// Frames that lie whole inside one socket read are passed on as slices of it, without a
    /// copy; only a frame that straddles reads is gathered into a buffer of its own. (NIO's
    /// `ByteToMessageHandler` copies every read after a partial frame into its cumulation
    /// buffer, which with 65,537-byte frames is nearly every byte of a bulk transfer.)
    final class FrameDecoder: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer

        let maxFrameLength: Int
        /// The start of a frame whose end has not arrived yet (its length bytes included).
        private var partial: ByteBuffer?
        private var failed = false

        init(maxFrameLength: Int) {
            self.maxFrameLength = maxFrameLength
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !failed else { return }
            var input = unwrapInboundIn(data)
            do {
                if var gathering = partial {
                    partial = nil
                    guard let frame = try complete(&gathering, from: &input) else {
                        partial = gathering
                        return
                    }
                    context.fireChannelRead(wrapInboundOut(frame))
                }
                while !failed, let length = try frameLength(in: input), input.readableBytes >= FrameEncoder.headerLength + length {
                    input.moveReaderIndex(forwardBy: FrameEncoder.headerLength)
                    context.fireChannelRead(wrapInboundOut(input.readSlice(length: length)!))
                }
                if !failed, input.readableBytes > 0 {
                    let length = try frameLength(in: input) ?? 0
                    var gathering = context.channel.allocator.buffer(capacity: FrameEncoder.headerLength + max(length, 1))
                    gathering.writeBuffer(&input)
                    partial = gathering
                    context.fireUserInboundEventTriggered(FrameStarted())
                }
            } catch {
                fail(context: context, error: error)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            if partial != nil { fail(context: context, error: SecureChannelError.truncatedFrame) }
            context.fireChannelInactive()
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case ChannelEvent.inputClosed = event, partial != nil {
                fail(context: context, error: SecureChannelError.truncatedFrame)
            }
            context.fireUserInboundEventTriggered(event)
        }

        /// The validated length of the frame starting at `buffer`'s reader index, or nil while
        /// its two length bytes have not both arrived.
        private func frameLength(in buffer: ByteBuffer) throws(SecureChannelError) -> Int? {
            guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self).map(Int.init) else { return nil }
            guard length > 0 else { throw .emptyFrame }
            guard length <= maxFrameLength else { throw .frameTooLarge(length: length, limit: maxFrameLength) }
            return length
        }

        /// Moves bytes from `input` into the partial frame `gathering` until it is complete;
        /// returns the frame's message, or nil when `input` ran out first.
        private func complete(_ gathering: inout ByteBuffer, from input: inout ByteBuffer) throws(SecureChannelError)
            -> ByteBuffer?
        {
            if gathering.readableBytes < FrameEncoder.headerLength {
                var header = input.readSlice(length: min(FrameEncoder.headerLength - gathering.readableBytes, input.readableBytes))!
                gathering.writeBuffer(&header)
            }
            guard let length = try frameLength(in: gathering) else { return nil }
            let missing = FrameEncoder.headerLength + length - gathering.readableBytes
            var rest = input.readSlice(length: min(missing, input.readableBytes))!
            gathering.writeBuffer(&rest)
            guard gathering.readableBytes == FrameEncoder.headerLength + length else { return nil }
            gathering.moveReaderIndex(forwardBy: FrameEncoder.headerLength)
            return gathering
        }

        private func fail(context: ChannelHandlerContext, error: any Error) {
            guard !failed else { return }
            failed = true
            partial = nil
            context.fireErrorCaught(error)
            context.close(promise: nil)
        }
    }

    /// The event `FrameDecoder` raises when a frame's first bytes have arrived without its end
    /// (its end arrives as the frame itself), so that the transport can hold the peer to a
    /// deadline for finishing it.
    struct FrameStarted {}

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
