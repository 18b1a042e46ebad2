import Foundation
import NIOCore
import PostgresNIO
import SecureRecords

/// How a write transaction whose COMMIT went unanswered ended, as the server records it.
///
/// A connection lost after COMMIT was sent leaves the client not knowing whether the change was
/// stored: the server may have committed it and lost only the answer, may still be committing it,
/// or may never have received the COMMIT (its process then sits idle in the transaction, holding
/// its row locks, until it notices the connection is gone). So every write transaction learns its
/// transaction id and server process with its BEGIN, and after such a loss the client asks
/// `txid_status` on a new connection (PostgreSQL's documented way to settle it): `committed` or
/// `aborted` is final. While it says `in progress`, the client asks again; after
/// `terminateAfter` it ends that server process (its own, matched by process id and transaction
/// id, never another's), which makes the server settle the transaction: a COMMIT already under
/// way completes, one never received is rolled back. Both are asked about in autocommit, outside
/// any transaction.
enum CommitOutcome {
    /// How long a transaction may stay in progress before its server process is ended.
    static let terminateAfter = TimeAmount.milliseconds(500)

    /// A write transaction as the server knows it.
    struct Transaction: Sendable {
        /// `txid_current()`: the transaction id with its epoch.
        let id: Int64
        /// `pg_backend_pid()`: the server process running it.
        let process: Int32
    }

    /// Begins a write transaction (READ COMMITTED) on `tx`'s connection and learns its id and
    /// process, in one round trip (the id is assigned at once: the transaction writes anyway).
    static func begin(_ tx: PostgresSession.Transaction) throws(PostgresSession.PostgresFailure) -> Transaction {
        let rows = try tx.pipeline([
            ("BEGIN ISOLATION LEVEL READ COMMITTED", PostgresBindings()),
            ("SELECT txid_current(), pg_backend_pid()", PostgresBindings()),
        ])
        do {
            if let row = rows[1].first {
                let (id, process) = try row.decode((Int64, Int32).self)
                return Transaction(id: id, process: process)
            }
        } catch {
            throw PostgresSession.PostgresFailure(error: error)
        }
        let place = tx.session.configuration.displayName
        throw PostgresSession.PostgresFailure(
            error: RecordsError.storage(StorageFailure(.malformedStorage, "\(place): no transaction id from txid_current()")))
    }

    /// Whether `transaction` committed (true) or was rolled back (false), asked on `tx`'s
    /// connection outside any transaction until `deadline`. Fails with the connection's failure,
    /// or, if the server cannot say by the deadline (still in progress, or an id it no longer
    /// knows), with a failure the caller reports as an unknown outcome.
    static func committed(
        _ transaction: Transaction, _ tx: PostgresSession.Transaction, until deadline: NIODeadline
    ) throws(RecordsError) -> Bool {
        let place = tx.session.configuration.displayName
        let started = NIODeadline.now()
        var pause = TimeAmount.milliseconds(20)
        var terminated = false
        while true {
            let status: String?
            do throws(PostgresSession.PostgresFailure) {
                var binds = PostgresBindings()
                binds.append(transaction.id)
                let rows = try tx.query("SELECT txid_status($1)", binds)
                do {
                    status = try rows.first?.decode(String?.self) ?? nil
                } catch {
                    throw PostgresSession.PostgresFailure(error: error)
                }
            } catch {
                throw tx.map(error)
            }
            switch status {
            case "committed":
                return true
            case "aborted":
                return false
            case "in progress":
                if !terminated, NIODeadline.now() - started >= terminateAfter {
                    terminated = true
                    var binds = PostgresBindings()
                    binds.append(transaction.process)
                    binds.append(String(UInt32(truncatingIfNeeded: transaction.id)))
                    // Best effort: a role that may not end it waits for the server to notice the
                    // lost connection, or for the deadline.
                    _ = try? tx.query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND backend_xid::text = $2", binds)
                }
            default:
                throw .storage(StorageFailure(.outcomeUnknown, "\(place): the server no longer knows transaction \(transaction.id)"))
            }
            guard NIODeadline.now() + pause < deadline else {
                throw .storage(StorageFailure(.connectionLost, "\(place): the transaction was still in progress on the server at the deadline"))
            }
            Thread.sleep(forTimeInterval: Double(pause.nanoseconds) / 1e9)
            pause = min(pause * 2, .milliseconds(500))
        }
    }
}
