#if canImport(CLinuxExtras)
import CLinuxExtras
#endif
import Foundation
import NIOCore
import SecureFoundation
import Synchronization

/// Standard input as messages, read on a background thread once the first connection asks for
/// it. Each message is what the input holds at that moment, up to `messageCapacity` (so a line
/// typed on a terminal goes at once, and a fast pipe or a file goes in large messages), read
/// straight into the buffer that is sent. At most `maxQueuedMessages` wait to be taken: a slow
/// peer backpressures the reading, and through it the program writing to our standard input.
/// A waiting `next()` that is cancelled returns nil without consuming anything, so with
/// `--keep-serving` no input is lost between connections.
final class ChannelInput: Sendable {
    /// The most bytes read into one message: four transport frames' worth is enough that the
    /// per-message costs (a hop to the event loop, the pacing) disappear beside the sealing.
    static let messageCapacity = 256 * 1024
    /// Messages read ahead of the connection.
    static let maxQueuedMessages = 4

    private struct State {
        var started = false
        var messages = [ByteBuffer]()
        /// The end of input, or the read error that ended it.
        var end: Result<Void, any Error>?
        var waiter: (id: UInt64, continuation: CheckedContinuation<ByteBuffer?, any Error>)?
        var nextID: UInt64 = 0
        /// A message taken and not sent (its connection ended first), handed out again first. It
        /// holds no place in the queue's count: that was given back when it was taken.
        var givenBack: ByteBuffer?

        /// A queued message, else the end (nil, or the error); `.none` while input is awaited.
        mutating func take() -> Result<ByteBuffer?, any Error>? {
            if !messages.isEmpty { return .success(messages.removeFirst()) }
            switch end {
            case .success?: return .success(nil)
            case .failure(let error)?: return .failure(error)
            case nil: return nil
            }
        }
    }

    private let state = Mutex(State())
    /// Free places in the queue: the reading thread takes one before each read.
    private let room = DispatchSemaphore(value: maxQueuedMessages)

    /// The next message; nil at the end of input or when the calling task is cancelled.
    /// Throws `SecureCoreError.io` when standard input cannot be read.
    func next() async throws -> ByteBuffer? {
        if let message = state.withLock({ state in defer { state.givenBack = nil }; return state.givenBack }) { return message }
        startIfNeeded()
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        let message = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ByteBuffer?, any Error>) in
                let taken = state.withLock { state -> Result<ByteBuffer?, any Error>? in
                    if Task.isCancelled { return .success(nil) }
                    if let taken = state.take() { return taken }
                    state.waiter = (id, continuation)
                    return nil
                }
                if let taken { continuation.resume(with: taken) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<ByteBuffer?, any Error>? in
                guard let waiter = state.waiter, waiter.id == id else { return nil }
                state.waiter = nil
                return waiter.continuation
            }
            waiter?.resume(returning: nil)
        }
        if message != nil { room.signal() }
        return message
    }

    /// Gives back the message `next()` returned last, which was not sent: the next call returns it.
    func giveBack(_ message: ByteBuffer) {
        state.withLock { $0.givenBack = message }
    }

    private func startIfNeeded() {
        let start = state.withLock { state -> Bool in
            defer { state.started = true }
            return !state.started
        }
        guard start else { return }
        Thread { [self] in readUntilEnd() }.start()
    }

    /// The reading thread: fills messages while the input has bytes ready, hands them over.
    private func readUntilEnd() {
        let input = FileInput(descriptor: STDIN_FILENO, name: "standard input")
        ChannelInput.holdWholeMessages(STDIN_FILENO)
        var buffers = MessageBuffers()
        while true {
            room.wait()
            var message = buffers.take()
            var ended = false
            do {
                repeat {
                    let count = try message.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { try input.readAvailable(into: $0) }
                    ended = count == 0
                } while !ended && message.writableBytes > 0 && input.isReadyToRead
            } catch {
                deliver(message, end: .failure(error))
                return
            }
            buffers.keep(message)
            deliver(message, end: ended ? .success(()) : nil)
            if ended { return }
        }
    }

    /// Makes the pipe `descriptor` (standard input or output) hold a whole message, so each read
    /// or write moves up to `messageCapacity` bytes at once instead of the default 64 KiB, with a
    /// quarter of the wake-ups of the program at the other end. Advisory: when it is refused (not a
    /// pipe, or over the system's limit), nothing changes.
    static func holdWholeMessages(_ descriptor: Int32) {
        #if canImport(CLinuxExtras)
        _ = fcntl(descriptor, F_SETPIPE_SZ, Int32(messageCapacity))
        #endif
    }

    /// The message buffers, reused once the connection has sealed and dropped them: a buffer
    /// this large, freshly allocated, costs the kernel faulting in and zeroing its pages.
    private struct MessageBuffers {
        /// Buffers handed over (queued, being sealed, or free again), kept to be taken again.
        private var handedOver: [ByteBuffer] = []
        private let allocator = ByteBufferAllocator()

        /// An empty buffer of `messageCapacity` bytes that nothing else references.
        mutating func take() -> ByteBuffer {
            if let index = handedOver.indices.first(where: { handedOver[$0].modifyIfUniquelyOwned({ _ in true }) == true }) {
                var buffer = handedOver.remove(at: index)
                buffer.clear()
                return buffer
            }
            return allocator.buffer(capacity: messageCapacity)
        }

        /// Keeps `buffer`, about to be handed over, to take it again once the connection drops it.
        mutating func keep(_ buffer: ByteBuffer) {
            if handedOver.count < maxQueuedMessages + 2 { handedOver.append(buffer) }
        }
    }

    private func deliver(_ message: ByteBuffer, end: Result<Void, any Error>?) {
        let waiter = state.withLock { state -> (CheckedContinuation<ByteBuffer?, any Error>, Result<ByteBuffer?, any Error>)? in
            if message.readableBytes > 0 { state.messages.append(message) }
            if let end { state.end = end }
            guard let waiter = state.waiter, let taken = state.take() else { return nil }
            state.waiter = nil
            return (waiter.continuation, taken)
        }
        if message.readableBytes == 0 { room.signal() }
        if let (continuation, taken) = waiter { continuation.resume(with: taken) }
    }
}

/// Pumps one authenticated connection: standard input to the peer, then our end of stream; the
/// peer's messages to standard output until its end of stream (as `nc -N`: the end of our input
/// half-closes, and reading goes on).
enum ChannelSession {
    /// When the connection is done.
    enum Completion {
        /// Both directions ended: our input (and then our end of stream) and the peer's stream.
        case bothDirections
        /// The peer's end of stream ends the connection: we send our end of stream then, and the
        /// input not read yet stays for the next connection (serving one after another).
        case peerEnds
    }

    /// Returns once the connection completed as `completion` says; throws when the peer's stream
    /// was cut (`closedBeforeEndOfStream`), failed authentication or framing, or our messages
    /// could not be sent. The connection is then closed without our end of stream.
    ///
    /// With `idleTimeout`, a connection on which nothing was received or sent for that long fails
    /// (so a peer that connects and goes quiet cannot hold a server that serves one at a time).
    static func run(
        _ connection: SecureChannel.Connection, input: ChannelInput, completion: Completion, idleTimeout: Duration? = nil
    ) async throws {
        signal(SIGPIPE, SIG_IGN)
        enum Finished { case receiving, sending(failure: (any Error)?), watching }
        let activity = Activity()
        try await connection.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: Finished.self) { group in
                group.addTask {
                    ChannelInput.holdWholeMessages(STDOUT_FILENO)
                    let output = FileOutput(descriptor: STDOUT_FILENO, name: "standard output")
                    for try await message in inbound {
                        activity.touch()
                        try message.withUnsafeReadableBytes { bytes throws(SecureCoreError) in try output.write(bytes) }
                    }
                    return .receiving
                }
                if let idleTimeout {
                    group.addTask {
                        do {
                            while true {
                                try await Task.sleep(for: min(idleTimeout / 4, .seconds(1)))
                                if activity.idle >= idleTimeout { throw CLIError("nothing sent or received for \(idleTimeout)") }
                            }
                        } catch is CancellationError {
                            return .watching
                        }
                    }
                }
                group.addTask {
                    do {
                        while let message = try await input.next() {
                            activity.touch()
                            do {
                                try await outbound.write(message)
                            } catch {
                                // The write failed before the message reached the connection (the
                                // peer ended or closed while it waited for room): it goes to the
                                // next connection.
                                input.giveBack(message)
                                throw error
                            }
                        }
                    } catch {
                        // Why sending failed is usually why receiving fails (a cut or forged
                        // stream): that error is the one reported, if there is one.
                        return .sending(failure: error)
                    }
                    return .sending(failure: nil)
                }
                var receiving = true, sending = true
                var sendFailure: (any Error)?
                while receiving || sending, let finished = try await group.next() {
                    switch finished {
                    case .receiving:
                        receiving = false
                        // A waiting read of the input returns without taking anything.
                        if completion == .peerEnds && sending { group.cancelAll() }
                    case .sending(nil):
                        sending = false
                        outbound.finish()  // our end of stream now; reading goes on
                    case .sending(let failure?):
                        sending = false
                        if !(failure is CancellationError) { sendFailure = failure }
                    case .watching:
                        break
                    }
                }
                // Why sending failed is usually why receiving fails, and that was thrown first.
                if let sendFailure { throw sendFailure }
                group.cancelAll()  // the idle watch
            }
        }
    }
}

/// When a connection last sent or received something.
private final class Activity: Sendable {
    private let last = Mutex(ContinuousClock.now)

    func touch() { last.withLock { $0 = .now } }

    var idle: Duration { ContinuousClock.now - last.withLock { $0 } }
}
