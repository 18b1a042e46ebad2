import Foundation
import NIOCore
import SecureFoundation
import Synchronization

/// Standard input as chunks, read on a background thread once the first connection asks for it.
/// A waiting `next()` that is cancelled returns nil without consuming anything, so with
/// `--keep-serving` no input is lost between connections.
final class ChannelInput: Sendable {
    private struct State {
        var started = false
        var chunks = [Data]()
        var ended = false
        var waiter: (id: UInt64, continuation: CheckedContinuation<Data?, Never>)?
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The next chunk; nil at end of input or when the calling task is cancelled.
    func next() async -> Data? {
        startIfNeeded()
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let immediate: Data?? = state.withLock { state in
                    if !state.chunks.isEmpty { return .some(state.chunks.removeFirst()) }
                    if state.ended || Task.isCancelled { return .some(nil) }
                    state.waiter = (id, continuation)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Data?, Never>? in
                guard let waiter = state.waiter, waiter.id == id else { return nil }
                state.waiter = nil
                return waiter.continuation
            }
            waiter?.resume(returning: nil)
        }
    }

    private func startIfNeeded() {
        let start = state.withLock { state -> Bool in
            defer { state.started = true }
            return !state.started
        }
        guard start else { return }
        let thread = Thread { [self] in
            while true {
                let data = FileHandle.standardInput.availableData
                deliver(data.isEmpty ? nil : data)
                if data.isEmpty { return }
            }
        }
        thread.start()
    }

    private func deliver(_ chunk: Data?) {
        let waiter = state.withLock { state -> (CheckedContinuation<Data?, Never>, Data?)? in
            if let chunk { state.chunks.append(chunk) } else { state.ended = true }
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            return (waiter.continuation, state.chunks.isEmpty ? nil : state.chunks.removeFirst())
        }
        if let (continuation, value) = waiter { continuation.resume(returning: value) }
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
                    for try await message in inbound {
                        activity.touch()
                        FileHandle.standardOutput.write(Data(message.readableBytesView))
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
                        while let chunk = await input.next() {
                            activity.touch()
                            try await outbound.write(ByteBuffer(bytes: chunk))
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
