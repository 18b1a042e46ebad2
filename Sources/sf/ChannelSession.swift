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

    /// True once standard input has ended and every chunk was taken.
    var isFinished: Bool { state.withLock { $0.ended && $0.chunks.isEmpty } }

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

/// Pumps one authenticated connection: input to the peer, the peer to standard output, until
/// either ends.
enum ChannelSession {
    enum Ending: Sendable { case inputEnded, peerClosed }

    static func run(_ connection: SecureChannel.Connection, input: ChannelInput) async throws -> Ending {
        signal(SIGPIPE, SIG_IGN)
        return try await connection.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: Ending.self) { group in
                group.addTask {
                    for try await message in inbound {
                        FileHandle.standardOutput.write(Data(message.readableBytesView))
                    }
                    return .peerClosed
                }
                group.addTask {
                    while let chunk = await input.next() {
                        try await outbound.write(ByteBuffer(bytes: chunk))
                    }
                    return input.isFinished ? .inputEnded : .peerClosed
                }
                let first = try await group.next() ?? .peerClosed
                group.cancelAll()
                return first
            }
        }
    }
}
