import Foundation
import NIOCore
import NIOFoundationCompat

extension SecureChannel {
    /// After the handshake: decrypts inbound frames and reassembles application messages;
    /// splits and encrypts outbound application messages. Any decryption or framing error is
    /// raised in the pipeline (so the async inbound sequence throws it) and closes the connection;
    /// the message it affected is never delivered.
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
                let plaintext = try transport.readMessage(frame.readableBytesView)
                if let message = try reassembler.append(plaintext) { context.fireChannelRead(wrapInboundOut(message)) }
            } catch {
                failed = true
                context.fireErrorCaught(HandshakeHandler.channelError(error))
                context.close(promise: nil)
            }
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            let message = unwrapOutboundIn(data)
            do {
                let plaintexts = ApplicationFraming.plaintexts(of: message)
                for (index, plaintext) in plaintexts.enumerated() {
                    let ciphertext = try transport.writeMessage(plaintext)
                    context.write(
                        wrapOutboundOut(ByteBuffer(bytes: ciphertext)), promise: index == plaintexts.count - 1 ? promise : nil)
                }
            } catch {
                promise?.fail(HandshakeHandler.channelError(error))
            }
        }
    }
}
