import Foundation
import NIOCore

extension SecureChannel {
    /// After the handshake: decrypts inbound frames and reassembles application messages;
    /// splits and encrypts outbound application messages and writes them as frames. Any
    /// decryption or framing error is raised in the pipeline (so the async inbound sequence throws
    /// it) and closes the connection; the message it affected is never delivered.
    final class TransportHandler: ChannelDuplexHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        typealias OutboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private let transport: Noise.TransportState
        private var reassembler: ApplicationFraming.Reassembler
        private var failed = false

        init(transport: Noise.TransportState, maxMessageLength: Int) {
            self.transport = transport
            reassembler = ApplicationFraming.Reassembler(limit: maxMessageLength)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !failed else { return }
            let frame = unwrapInboundIn(data)
            do {
                let plaintext = try frame.withUnsafeReadableBytes { bytes throws(NoiseError) in try transport.readMessage(bytes) }
                if let message = try reassembler.append(plaintext, allocator: context.channel.allocator) {
                    context.fireChannelRead(wrapInboundOut(message))
                }
            } catch {
                failed = true
                context.fireErrorCaught(HandshakeHandler.channelError(error))
                context.close(promise: nil)
            }
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            let message = unwrapOutboundIn(data)
            do {
                try ApplicationFraming.seal(message, with: transport, allocator: context.channel.allocator) { frames, isLast in
                    context.write(wrapOutboundOut(frames), promise: isLast ? promise : nil)
                }
            } catch {
                promise?.fail(HandshakeHandler.channelError(error))
            }
        }
    }
}
