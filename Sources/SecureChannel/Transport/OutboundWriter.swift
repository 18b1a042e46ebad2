import NIOCore
import Synchronization

extension SecureChannel {
    /// Writes application messages to a `Connection`, paced by the connection: `write` suspends
    /// while more than `Configuration.maxBufferedOutboundBytes` of earlier messages are still in
    /// this process (queued, being sealed, or sealed and waiting for the socket), and resumes as
    /// the socket drains them (NIO's writability and write completions). So a writer faster than
    /// the network or the peer is backpressured and never queues more than that bound (or one
    /// message, if a single message is larger), whatever the scheduling.
    public struct OutboundWriter: Sendable {
        let writer: NIOAsyncChannelOutboundWriter<ByteBuffer>
        let pacing: OutboundPacing

        /// Writes one application message (of any size up to the peer's maximum), waiting first
        /// until the bytes buffered in this process are below the bound. When the connection has
        /// ended, throws the `SecureChannelError` that ended it (the one the inbound sequence
        /// throws, such as `closedBeforeEndOfStream` or `peerUnresponsive`), or `connectionClosed`
        /// when it ended without one (cleanly, or by a socket error of no meaning for the stream,
        /// which the inbound sequence throws as NIO's `IOError`); throws `CancellationError` when the task is cancelled
        /// while waiting, and NIO's writer error after `finish()`. The message is then not sent.
        public func write(_ message: ByteBuffer) async throws {
            let count = message.readableBytes
            try await pacing.reserve(count)
            do {
                try await writer.write(message)
            } catch {
                pacing.release(count)
                throw pacing.meaning(of: error)
            }
        }

        /// Writes the messages in order, each paced as `write(_:)`.
        public func write<Messages: Sequence<ByteBuffer>>(contentsOf messages: Messages) async throws {
            for message in messages { try await write(message) }
        }

        /// Ends the outbound direction: after the messages written before it, the peer receives
        /// the authenticated end of stream (and the socket's output is shut), so it knows nothing
        /// was cut off. Reading goes on until the peer's own end of stream. Later writes fail.
        /// `Connection.executeThenClose` calls this when its body returns, and waits until the
        /// end of stream is written.
        public func finish() {
            writer.finish()
        }
    }

    /// The byte count behind `OutboundWriter`'s pacing: bytes handed to the connection and not yet
    /// written to the socket. Writers reserve before writing; `TransportHandler` releases when a
    /// message's last frame has been written (or failed), and closes it, with the reason, when the
    /// connection ends.
    final class OutboundPacing: Sendable {
        /// The bound on buffered bytes (a single larger message is still let through alone).
        let limit: Int

        private struct Waiter {
            let id: UInt64
            let count: Int
            let continuation: CheckedContinuation<Void, any Error>
        }

        private struct State {
            var queued = 0
            var peak = 0
            /// Why the connection ended, once it has.
            var closed: SecureChannelError?
            var nextID: UInt64 = 0
            var waiters = [Waiter]()

            /// Admits `count` bytes when nothing waits before it and they fit (or nothing is queued).
            mutating func admit(_ count: Int, limit: Int) -> Bool {
                guard queued == 0 || queued + count <= limit else { return false }
                queued += count
                peak = max(peak, queued)
                return true
            }
        }

        private let state = Mutex(State())

        init(limit: Int) { self.limit = max(1, limit) }

        /// The bytes buffered now.
        var queuedBytes: Int { state.withLock { $0.queued } }
        /// The most bytes ever buffered at once on this connection.
        var peakQueuedBytes: Int { state.withLock { $0.peak } }

        /// Waits until `count` more bytes may be buffered, then counts them.
        func reserve(_ count: Int) async throws {
            let id = state.withLock { state in
                defer { state.nextID += 1 }
                return state.nextID
            }
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    enum Decision { case go, closed(SecureChannelError), cancelled, wait }
                    let decision = state.withLock { state -> Decision in
                        if let reason = state.closed { return .closed(reason) }
                        if Task.isCancelled { return .cancelled }
                        if state.waiters.isEmpty && state.admit(count, limit: limit) { return .go }
                        state.waiters.append(Waiter(id: id, count: count, continuation: continuation))
                        return .wait
                    }
                    switch decision {
                    case .go: continuation.resume()
                    case .closed(let reason): continuation.resume(throwing: reason)
                    case .cancelled: continuation.resume(throwing: CancellationError())
                    case .wait: break
                    }
                }
            } onCancel: {
                let waiter = state.withLock { state -> Waiter? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index)
                }
                waiter?.continuation.resume(throwing: CancellationError())
            }
        }

        /// Uncounts `count` bytes (written to the socket, or failed) and lets waiting writers on.
        func release(_ count: Int) {
            let ready = state.withLock { state -> [Waiter] in
                state.queued = max(0, state.queued - count)
                var ready = [Waiter]()
                while let first = state.waiters.first, state.admit(first.count, limit: limit) {
                    ready.append(state.waiters.removeFirst())
                }
                return ready
            }
            for waiter in ready { waiter.continuation.resume() }
        }

        /// The connection ended because of `reason`: waiting and later writers fail with it. The
        /// first reason stays.
        func close(because reason: SecureChannelError) {
            let (waiters, reason) = state.withLock { state -> ([Waiter], SecureChannelError) in
                if state.closed == nil { state.closed = reason }
                defer { state.waiters = [] }
                return (state.waiters, state.closed ?? reason)
            }
            for waiter in waiters { waiter.continuation.resume(throwing: reason) }
        }

        /// What a failed write means: NIO's error for a channel that is closed (the writer of a
        /// connection that ended fails with `ioOnClosedChannel`) becomes why the connection
        /// ended; any other error is itself.
        func meaning(of error: any Error) -> any Error {
            guard error is ChannelError, let reason = state.withLock({ $0.closed }) else { return error }
            return reason
        }
    }
}

extension SecureChannel {
    /// How this side's stream ended, shared by a `Connection` and its `TransportHandler`: whether
    /// the application aborted (so no end-of-stream message may be sent), and, once settled,
    /// whether the end-of-stream message reached the socket.
    final class StreamEnd: Sendable {
        private struct State {
            var aborted = false
            var result: Result<Void, any Error>?
            var waiters = [CheckedContinuation<Void, any Error>]()
        }

        private let state = Mutex(State())

        /// The application failed: the output is closed without an end-of-stream message.
        func abort() { state.withLock { $0.aborted = true } }

        var isAborted: Bool { state.withLock { $0.aborted } }

        /// Records how the end of stream went (the first call wins) and wakes the waiters.
        func settle(_ result: Result<Void, any Error>) {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
                guard state.result == nil else { return [] }
                state.result = result
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(with: result) }
        }

        /// Waits until the end-of-stream message was written to the socket; throws why it was not.
        func written() async throws {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let result = state.withLock { state -> Result<Void, any Error>? in
                    if state.result == nil { state.waiters.append(continuation) }
                    return state.result
                }
                if let result { continuation.resume(with: result) }
            }
        }
    }
}
