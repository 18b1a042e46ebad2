import Foundation
import NIOCore

extension SecureChannel {
    /// After the handshake: decrypts inbound frames and reassembles application messages;
    /// splits and encrypts outbound application messages and writes them as frames. Any
    /// decryption or framing error is raised in the pipeline (so the async inbound sequence throws
    /// it) and closes the connection; the message it affected is never delivered.
    ///
    /// Outbound messages are sealed when flushed and only while the channel is writable; the rest
    /// wait, unsealed, until the socket has drained below the low watermark. So a writer that runs
    /// ahead (the async writer hops to the event loop without waiting) does not pile up sealed
    /// copies, and the few frame buffers in flight are reused (`ApplicationFraming.SendBuffers`).
    /// Each message's bytes are released from the connection's `OutboundPacing` when its last
    /// frame has been written to the socket (or failed), which is what paces `OutboundWriter`.
    final class TransportHandler: ChannelDuplexHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        typealias OutboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private let transport: Noise.TransportState
        private let pacing: OutboundPacing
        private var reassembler: ApplicationFraming.Reassembler
        private var failed = false
        /// Messages written and not sealed yet, in order; the first `flushedCount` were flushed.
        private var queued = CircularBuffer<(message: ByteBuffer, promise: EventLoopPromise<Void>?)>(initialCapacity: 4)
        private var flushedCount = 0
        private var sealing = false
        private var sendBuffers = ApplicationFraming.SendBuffers()
        private var lastWrite = NIODeadline.uptimeNanoseconds(0)
        private var releaseSendBuffers: Scheduled<Void>?
        /// How long the connection sends nothing before its kept send buffers are freed.
        static let sendBufferIdleTime = TimeAmount.seconds(1)

        init(transport: Noise.TransportState, maxMessageLength: Int, pacing: OutboundPacing) {
            self.transport = transport
            self.pacing = pacing
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
            queued.append((unwrapOutboundIn(data), promise))
        }

        func flush(context: ChannelHandlerContext) {
            flushedCount = queued.count
            sealFlushed(context: context, whileWritable: true)
        }

        func channelWritabilityChanged(context: ChannelHandlerContext) {
            if context.channel.isWritable { sealFlushed(context: context, whileWritable: true) }
            context.fireChannelWritabilityChanged()
        }

        /// Closing hands every flushed message to the channel first (as if the socket were
        /// writable), so a close sends what was flushed before it, as it would without this
        /// handler; messages written but never flushed fail.
        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            sealFlushed(context: context, whileWritable: false)
            failQueued(ChannelError.ioOnClosedChannel)
            context.close(mode: mode, promise: promise)
        }

        func channelInactive(context: ChannelHandlerContext) {
            failQueued(ChannelError.ioOnClosedChannel)
            pacing.close()
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            failQueued(ChannelError.ioOnClosedChannel)
            pacing.close()
            releaseSendBuffers?.cancel()
            releaseSendBuffers = nil
            sendBuffers.removeAll()
        }

        /// Seals and writes the flushed messages, in order, while the channel is writable (or all
        /// of them), then flushes. Not reentrant: a flush that drains the socket at once makes
        /// the loop continue instead.
        private func sealFlushed(context: ChannelHandlerContext, whileWritable: Bool) {
            guard !sealing else { return }
            sealing = true
            defer { sealing = false }
            var wrote = false
            while flushedCount > 0 {
                if whileWritable && !context.channel.isWritable {
                    if wrote {
                        wrote = false
                        context.flush()  // may drain the socket at once and make the channel writable again
                        continue
                    }
                    break
                }
                let (message, promise) = queued.removeFirst()
                flushedCount -= 1
                seal(message, promise: promise, context: context)
                wrote = true
            }
            if wrote { context.flush() }
        }

        private func seal(_ message: ByteBuffer, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
            let count = message.readableBytes
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { [pacing] result in
                pacing.release(count)
                promise?.completeWith(result)
            }
            do {
                try ApplicationFraming.seal(
                    message, with: transport, buffers: &sendBuffers, allocator: context.channel.allocator
                ) { frames, isLast in
                    context.write(wrapOutboundOut(frames), promise: isLast ? written : nil)
                }
            } catch {
                written.fail(HandshakeHandler.channelError(error))
            }
            if !sendBuffers.isEmpty {
                lastWrite = .now()
                if releaseSendBuffers == nil { scheduleRelease(context: context, in: Self.sendBufferIdleTime) }
            }
        }

        private func failQueued(_ error: any Error) {
            flushedCount = 0
            while let (message, promise) = queued.popFirst() {
                pacing.release(message.readableBytes)
                promise?.fail(error)
            }
        }

        /// Frees the kept send buffers once nothing has been written for `sendBufferIdleTime`, so
        /// an idle connection holds none.
        private func scheduleRelease(context: ChannelHandlerContext, in delay: TimeAmount) {
            releaseSendBuffers = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
                let idle = NIODeadline.now() - lastWrite
                if idle >= Self.sendBufferIdleTime {
                    sendBuffers.removeAll()
                    releaseSendBuffers = nil
                } else {
                    scheduleRelease(context: context, in: Self.sendBufferIdleTime - idle)
                }
            }
        }
    }
}
