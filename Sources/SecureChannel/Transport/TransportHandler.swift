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
    ///
    /// The end of stream: closing the output (`OutboundWriter.finish()`) sends the end-of-stream
    /// message after every message flushed before it and shuts the socket's output down once it
    /// is written, unless the connection's `StreamEnd` was aborted (then the socket's output is
    /// shut without it, and the peer sees a cut stream). The peer's end of stream ends the
    /// inbound sequence; the peer closing, resetting or shutting its output without one raises
    /// `closedBeforeEndOfStream`, and anything after it is `malformedApplicationFrame`. A peer
    /// that keepalive or retransmission gave up on raises `peerUnresponsive`.
    ///
    /// A peer that has begun a frame or a multi-frame message must deliver a whole frame at least
    /// every `messageTimeout` until the message ends (`messageTimeout` then); a term that ends
    /// while this side holds its reads back (backpressure, a connection not yet taken) starts
    /// again once they resume, as the peer could not go on meanwhile: a
    /// message left unfinished would otherwise hold its buffer, up to `maxMessageLength`, as long
    /// as the connection lives, and keepalive probes, which the peer's kernel answers, never end it.
    ///
    /// Outbound, while bytes handed to the channel wait for the socket, the socket must take some
    /// of them in every `sendTimeout` term (checked once a term, so a stall ends the connection
    /// within two; `sendTimeout` then): a peer that reads nothing would
    /// otherwise hold the writer, its paced bytes and the end of stream for as long as its kernel
    /// answers keepalive probes. Progress is counted in bytes (what was handed to the channel less
    /// what it still holds), so a slow reader is never taken for a stalled one.
    final class TransportHandler: ChannelDuplexHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        typealias OutboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private let transport: Noise.TransportState
        private let pacing: OutboundPacing
        private let streamEnd: StreamEnd
        private var reassembler: ApplicationFraming.Reassembler
        private var failed = false
        /// Why the stream failed, when it did: what a later write throws.
        private var failure: SecureChannelError?
        /// The peer's end-of-stream message has arrived.
        private var peerEnded = false
        /// Our end-of-stream message has been handed to the socket (or the output closed without it).
        private var outputEnded = false
        /// This side closed the connection (so its end is no surprise).
        private var closing = false
        /// Messages written and not sealed yet, in order; the first `flushedCount` were flushed.
        private var queued = CircularBuffer<(message: ByteBuffer, promise: EventLoopPromise<Void>?)>(initialCapacity: 4)
        private var flushedCount = 0
        private var sealing = false
        private var sendBuffers = ApplicationFraming.SendBuffers()
        private var lastWrite = NIODeadline.uptimeNanoseconds(0)
        private var releaseSendBuffers: Scheduled<Void>?
        /// How long the connection sends nothing before its kept send buffers are freed.
        static let sendBufferIdleTime = TimeAmount.seconds(1)
        /// The time the peer has for each whole frame while a frame or message is unfinished.
        private let messageTimeout: TimeAmount
        /// A frame's first bytes have arrived, and its end has not.
        private var frameStarted = false
        /// A read was asked of the socket and nothing has arrived since: a silence now is the peer's.
        private var readRequested = false
        private var unfinishedDeadline: Scheduled<Void>?
        /// The deadline came while this side held back its reads: it starts over when they resume.
        private var deadlineHeld = false
        /// The time the socket has to take some of the bytes waiting for it.
        private let sendTimeout: TimeAmount
        /// Bytes handed to the channel since the connection began.
        private var bytesHanded = 0
        /// Bytes the socket had taken when the running send deadline was set.
        private var bytesTakenAtDeadline = 0
        private var sendDeadline: Scheduled<Void>?

        init(
            transport: Noise.TransportState, maxMessageLength: Int, messageTimeout: TimeAmount, sendTimeout: TimeAmount,
            pacing: OutboundPacing, streamEnd: StreamEnd
        ) {
            self.transport = transport
            self.messageTimeout = messageTimeout
            self.sendTimeout = sendTimeout
            self.pacing = pacing
            self.streamEnd = streamEnd
            reassembler = ApplicationFraming.Reassembler(limit: maxMessageLength)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !failed else { return }
            let frame = unwrapInboundIn(data)
            frameStarted = false
            defer { if !failed { watchUnfinished(context: context, progressed: true) } }
            do {
                guard !peerEnded else { throw SecureChannelError.malformedApplicationFrame }
                let plaintext = try frame.withUnsafeReadableBytes { bytes throws(NoiseError) in try transport.readMessage(bytes) }
                switch try reassembler.append(plaintext, allocator: context.channel.allocator) {
                case .message(let message)?: context.fireChannelRead(wrapInboundOut(message))
                case .endOfStream?:
                    peerEnded = true
                    context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
                case nil: break
                }
            } catch {
                fail(context: context, error: HandshakeHandler.channelError(error))
            }
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            readRequested = false  // the socket read is spent; the channel asks again if it reads on
            context.fireChannelReadComplete()
        }

        func read(context: ChannelHandlerContext) {
            readRequested = true
            if deadlineHeld { watchUnfinished(context: context, progressed: true) }
            context.read()
        }

        /// The socket's input ended: the stream is complete only if the peer's end of stream
        /// came first (the inbound sequence then ended already). A frame begun (`FrameStarted`)
        /// starts the clock for finishing it.
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is FrameStarted {
                frameStarted = true
                return watchUnfinished(context: context, progressed: false)
            }
            guard case ChannelEvent.inputClosed = event else { return context.fireUserInboundEventTriggered(event) }
            if !peerEnded { fail(context: context, error: .closedBeforeEndOfStream) }
        }

        /// Keeps the deadline for an unfinished frame or message: none while nothing is
        /// unfinished; a new one when a whole frame arrived (`progressed`); else the running one.
        private func watchUnfinished(context: ChannelHandlerContext, progressed: Bool) {
            deadlineHeld = false
            guard frameStarted || reassembler.isPartway else {
                unfinishedDeadline?.cancel()
                unfinishedDeadline = nil
                return
            }
            guard progressed || unfinishedDeadline == nil else { return }
            unfinishedDeadline?.cancel()
            unfinishedDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: messageTimeout) { [self] in
                unfinishedDeadline = nil
                guard !failed else { return }
                // While this side holds back its reads the peer cannot go on: it gets a whole
                // term again once they resume (`read`).
                guard readRequested else {
                    deadlineHeld = true
                    return
                }
                fail(context: context, error: .messageTimeout)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // The frame decoder's own errors (a frame too large, ...) end the stream as ours do,
            // so a writer learns the same reason as the inbound sequence.
            if let typed = error as? SecureChannelError { return fail(context: context, error: typed) }
            if let typed = streamError(for: error) { return fail(context: context, error: typed) }
            failed = true  // any other socket error: the inbound sequence throws it
            context.fireErrorCaught(error)
        }

        /// What a socket error means for the stream, when it has a meaning of its own: a reset
        /// before the peer's end of stream cut the stream, as a close without it does (a relay
        /// that closes with unread bytes resets instead of closing cleanly); a timeout, or no
        /// route left to the peer, is keepalive or retransmission giving up on it. The error
        /// comes on a read, or on a write that meets it first (NIO then closes without raising it).
        private func streamError(for error: any Error) -> SecureChannelError? {
            guard let error = error as? IOError else { return nil }
            if !peerEnded, error.errnoCode == ECONNRESET || error.errnoCode == EPIPE { return .closedBeforeEndOfStream }
            if [ETIMEDOUT, EHOSTUNREACH, ENETUNREACH].contains(error.errnoCode) { return .peerUnresponsive }
            return nil
        }

        /// A write's outcome as the writer sees it: a socket error with a meaning for the stream
        /// fails the connection with it (and the write), as it would on a read.
        private func writeOutcome(_ result: Result<Void, any Error>, context: ChannelHandlerContext) -> Result<Void, any Error> {
            guard case .failure(let error) = result, let typed = streamError(for: error) else { return result }
            fail(context: context, error: typed)
            return .failure(typed)
        }

        private func fail(context: ChannelHandlerContext, error: SecureChannelError) {
            guard !failed else { return }
            failed = true
            failure = error
            // Our end of stream, if not written yet, never will be: it failed for this reason.
            streamEnd.settle(.failure(error))
            unfinishedDeadline?.cancel()
            unfinishedDeadline = nil
            sendDeadline?.cancel()
            sendDeadline = nil
            context.fireErrorCaught(error)
            context.close(promise: nil)
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
            guard mode == .output else {
                if mode == .all { closing = true }
                return context.close(mode: mode, promise: promise)
            }
            guard !outputEnded else {
                promise?.fail(ChannelError.outputClosed)
                return
            }
            outputEnded = true
            guard !streamEnd.isAborted, !failed else {
                streamEnd.settle(.failure(SecureChannelError.endOfStreamNotSent))
                return context.close(mode: .output, promise: promise)
            }
            // The socket's output is shut only once the end of stream has been written: shutting
            // it while writes are pending (after the peer's own shutdown) would drop them.
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.assumeIsolated().whenComplete { [self] result in
                let result = writeOutcome(result, context: context)
                // A write that failed without a meaning of its own (the channel closed under it).
                streamEnd.settle(result.mapError { $0 is SecureChannelError ? $0 : SecureChannelError.endOfStreamNotSent })
                guard case .success = result else {
                    promise?.completeWith(result)
                    return
                }
                context.close(mode: .output, promise: promise)
            }
            do {
                let endOfStream = try ApplicationFraming.sealEndOfStream(with: transport, allocator: context.channel.allocator)
                bytesHanded &+= endOfStream.readableBytes
                context.writeAndFlush(wrapOutboundOut(endOfStream), promise: written)
                watchSending(context: context)
            } catch {
                written.fail(HandshakeHandler.channelError(error))
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            if !peerEnded && !closing { fail(context: context, error: .closedBeforeEndOfStream) }
            failQueued(ChannelError.ioOnClosedChannel)
            pacing.close(because: failure ?? .connectionClosed)
            streamEnd.settle(.failure(SecureChannelError.endOfStreamNotSent))
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            unfinishedDeadline?.cancel()
            unfinishedDeadline = nil
            sendDeadline?.cancel()
            sendDeadline = nil
            failQueued(ChannelError.ioOnClosedChannel)
            pacing.close(because: failure ?? .connectionClosed)
            streamEnd.settle(.failure(SecureChannelError.endOfStreamNotSent))
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
            written.futureResult.assumeIsolated().whenComplete { [self] result in
                pacing.release(count)
                promise?.completeWith(writeOutcome(result, context: context))
            }
            do {
                try ApplicationFraming.seal(
                    message, with: transport, buffers: &sendBuffers, allocator: context.channel.allocator
                ) { frames, isLast in
                    bytesHanded &+= frames.readableBytes
                    context.write(wrapOutboundOut(frames), promise: isLast ? written : nil)
                }
                watchSending(context: context)
            } catch {
                written.fail(HandshakeHandler.channelError(error))
            }
            if !sendBuffers.isEmpty {
                lastWrite = .now()
                if releaseSendBuffers == nil { scheduleRelease(context: context, in: Self.sendBufferIdleTime) }
            }
        }

        /// Sets the deadline for the socket to take some of what was sent, unless one is running.
        /// When it comes: nothing waiting, it ends; bytes taken since it was set, it is set again;
        /// else the connection fails with `sendTimeout`.
        private func watchSending(context: ChannelHandlerContext) {
            guard sendDeadline == nil, !failed, let unsent = unsentBytes(context) else { return }
            bytesTakenAtDeadline = bytesHanded &- unsent
            sendDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: sendTimeout) { [self] in
                sendDeadline = nil
                guard !failed, let unsent = unsentBytes(context), unsent > 0 else { return }
                guard bytesHanded &- unsent == bytesTakenAtDeadline else { return watchSending(context: context) }
                fail(context: context, error: .sendTimeout)
            }
        }

        /// The bytes handed to the channel that the socket has not taken; nil for a channel that
        /// does not tell (not a socket).
        private func unsentBytes(_ context: ChannelHandlerContext) -> Int? {
            try? context.channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)
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
