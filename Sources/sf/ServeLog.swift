import Foundation
import Synchronization

/// What `sf channel serve` says on standard error, written by a thread of the log's own, so that
/// a standard error nobody reads (a full pipe) blocks that thread alone, never the network event
/// loops nor the serving. Reports, lines any peer can make as many of as it likes (rejected
/// connections, from the event loops; with `--any-peer`, served and failed ones too), are
/// bounded: at most `capacity` of them wait to be written, and those beyond are counted, and the
/// count said instead. The server's own lines (listening, advertising, deadlines, and the trusted
/// peers it serves, one at a time) are always kept, in order.
final class ServeLog: Sendable {
    /// Reports waiting to be written; more are counted instead.
    static let capacity = 64

    private enum Entry {
        case line(String)
        case written(CheckedContinuation<Void, Never>)
    }

    private struct State {
        var entries: [Entry] = []
        var reportsQueued = 0
        var reportsDropped = 0
    }

    private let state = Mutex(State())
    private let waiting = DispatchSemaphore(value: 0)

    init() {
        Thread { [self] in writeForever() }.start()
    }

    /// Queues one of the server's own lines (not about one connection).
    func say(_ line: String) {
        state.withLock { $0.entries.append(.line(line)) }
        waiting.signal()
    }

    /// Queues a report (a line any peer can cause) without waiting (it may come from an event
    /// loop); counts it instead when `capacity` reports wait already.
    func report(_ line: String) {
        let queued = state.withLock { state -> Bool in
            guard state.reportsQueued < Self.capacity else {
                state.reportsDropped += 1
                return false
            }
            state.reportsQueued += 1
            state.entries.append(.line(line))
            return true
        }
        if queued { waiting.signal() }
    }

    /// Returns once every line queued before it has been written (before the command's last
    /// message, or its exit).
    func flush() async {
        await withCheckedContinuation { continuation in
            state.withLock { $0.entries.append(.written(continuation)) }
            waiting.signal()
        }
    }

    /// The writing thread: takes what is queued (and the count of reports that were not), writes
    /// it in order, and waits for more.
    private func writeForever() {
        while true {
            waiting.wait()
            let (entries, dropped) = state.withLock { state in
                defer { state = State() }
                return (state.entries, state.reportsDropped)
            }
            if dropped > 0 { Terminal.writeError("sf channel: \(dropped) more lines about connections not shown") }
            for entry in entries {
                switch entry {
                case .line(let line): Terminal.writeError(line)
                case .written(let continuation): continuation.resume()
                }
            }
        }
    }
}
