import Foundation
import NIOCore
import PostgresNIO

/// The connections of one `PostgresSession`: at most `size` leased at once, the idle ones kept for
/// the next lease. A lease that finds none idle gets an empty slot, and its holder connects.
///
/// Blocking by design (`NSCondition`): its callers are the synchronous storage's threads, which
/// wait for the server anyway; a lease never waits past the deadline it is given.
final class ConnectionPool: @unchecked Sendable {
    /// A lease that waited for its deadline while every connection was in use.
    struct Exhausted: Error {}

    private let size: Int
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var idle: [PostgresConnection] = []
    private var leased = 0

    /// A pool of at most `size` connections (at least one).
    init(size: Int) {
        self.size = max(1, size)
    }

    /// Takes a connection slot, waiting until `deadline` while all are in use: an idle connection
    /// that is still open, or nil (the caller connects). Pair with `giveBack`.
    func lease(until deadline: NIODeadline) throws(Exhausted) -> PostgresConnection? {
        condition.lock()
        defer { condition.unlock() }
        while leased == size {
            // Waits of at most a second, each measured against the monotonic deadline (the
            // condition's own timeout follows the wall clock, which may be stepped).
            let remaining = deadline - .now()
            guard remaining > .zero else { throw Exhausted() }
            _ = condition.wait(until: Date(timeIntervalSinceNow: min(1, Double(remaining.nanoseconds) / 1e9)))
        }
        leased += 1
        while let connection = idle.popLast() {
            if !connection.isClosed { return connection }
        }
        return nil
    }

    /// Ends a lease: `connection`, when given and still open, becomes idle for the next lease.
    func giveBack(_ connection: PostgresConnection?) {
        condition.lock()
        leased -= 1
        if let connection, !connection.isClosed { idle.append(connection) }
        condition.signal()
        condition.unlock()
    }

    /// Removes and returns the idle connections (to close them).
    func takeIdle() -> [PostgresConnection] {
        condition.lock()
        defer { condition.unlock() }
        let taken = idle
        idle = []
        return taken
    }
}
