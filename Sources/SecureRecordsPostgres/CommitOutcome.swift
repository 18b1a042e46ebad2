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
/// transaction id, its server process and the server's run (`serverRun`) with its BEGIN, and after such
/// a loss the client asks `txid_status` on a new connection (PostgreSQL's documented way to settle
/// it), outside any transaction.
///
/// On the same server run, `committed` and `aborted` are final. While it says `in progress`, the
/// client asks again; after `terminateAfter` it ends that server process (its own, matched by
/// process id and transaction id), which makes the server settle the transaction: a COMMIT
/// already under way completes, one never received is rolled back.
///
/// After a restart, a crash recovery or a failover the answer is weaker: PostgreSQL does not log a transaction id
/// when it hands it out, so the id of a transaction whose log records were lost in a crash is
/// handed out again after recovery, and may have committed for another client by the time the
/// client asks. A committed transaction's id is never reused (its commit record is durable), so
/// any answer but `committed` (an id the server has not handed out yet, too) still means rolled
/// back; `committed` means committed *or reused*, which only the transaction's own writes can
/// tell apart (`Settled.committedOrReused`). No process is ended after a restart.
enum CommitOutcome {
    /// What changes when the server restarts or recovers from a crash: its postmaster's start
    /// time, and the time its statistics were reset (a crash of one server process makes the
    /// postmaster end the others and recover without restarting itself; recovery resets the
    /// statistics). A manual reset of the statistics reads as a restart too: the client is then
    /// only more careful.
    static let serverRun = "pg_postmaster_start_time()::text || ' ' || coalesce((SELECT stats_reset FROM pg_stat_bgwriter)::text, '')"

    /// How long a transaction may stay in progress before its server process is ended.
    static let terminateAfter = TimeAmount.milliseconds(500)

    /// A write transaction as the server knows it.
    struct Transaction: Sendable {
        /// `txid_current()`: the transaction id with its epoch.
        let id: Int64
        /// `pg_backend_pid()`: the server process running it.
        let process: Int32
        /// `serverRun`: the server run it belongs to.
        let serverRun: String
    }

    /// What the server's record says about a transaction.
    enum Settled {
        case committed
        case rolledBack
        /// `committed`, after the server restarted: this transaction, or another that was given its
        /// id again after a crash lost this one.
        case committedOrReused
    }

    /// Begins a write transaction (READ COMMITTED) on `tx`'s connection and learns its id, process
    /// and server run, in one round trip (the id is assigned at once: the transaction writes anyway).
    static func begin(_ tx: PostgresSession.Transaction) throws(PostgresSession.PostgresFailure) -> Transaction {
        let rows = try tx.pipeline([
            ("BEGIN ISOLATION LEVEL READ COMMITTED", PostgresBindings()),
            ("SELECT txid_current(), pg_backend_pid(), \(serverRun)", PostgresBindings()),
        ])
        do {
            if let row = rows[1].first {
                let (id, process, started) = try row.decode((Int64, Int32, String).self)
                return Transaction(id: id, process: process, serverRun: started)
            }
        } catch {
            throw PostgresSession.PostgresFailure(error: error)
        }
        let place = tx.session.configuration.displayName
        throw PostgresSession.PostgresFailure(
            error: RecordsError.storage(StorageFailure(.malformedStorage, "\(place): no transaction id from txid_current()")))
    }

    /// How `transaction` ended, asked on `tx`'s connection outside any transaction until
    /// `deadline`. Fails with the connection's failure, or, if the server cannot say by the
    /// deadline (still in progress, or an id it no longer knows), with a failure the caller
    /// reports as an unknown outcome.
    static func settle(
        _ transaction: Transaction, _ tx: PostgresSession.Transaction, until deadline: NIODeadline
    ) throws(RecordsError) -> Settled {
        let place = tx.session.configuration.displayName
        let started = NIODeadline.now()
        var pause = TimeAmount.milliseconds(20)
        var terminated = false
        var binds = PostgresBindings()
        binds.append(transaction.id)
        while true {
            let answer: (status: String?, serverRun: String)
            do throws(PostgresSession.PostgresFailure) {
                let results = tx.pipelineResults([
                    ("SELECT txid_status($1)", binds), ("SELECT \(serverRun)", PostgresBindings()),
                ])
                do {
                    guard let started = try results[1].get().first else {
                        throw RecordsError.storage(StorageFailure(.malformedStorage, "\(place): no answer about the server's run"))
                    }
                    switch results[0] {
                    case .success(let rows):
                        answer = (try rows.first?.decode(String?.self) ?? nil, try started.decode(String.self))
                    case .failure(let failure) where failure.sqlState == "22023":
                        // An id this server run has not handed out yet ("in the future").
                        answer = ("not yet given", try started.decode(String.self))
                    case .failure(let failure):
                        throw failure
                    }
                } catch let failure as PostgresSession.PostgresFailure {
                    throw failure
                } catch {
                    throw PostgresSession.PostgresFailure(error: error)
                }
            } catch {
                throw tx.map(error)
            }
            let restarted = answer.serverRun != transaction.serverRun
            switch answer.status {
            case "committed":
                return restarted ? .committedOrReused : .committed
            case "aborted", "not yet given":
                return .rolledBack
            case "in progress" where restarted:
                return .rolledBack  // another transaction given the id again: this one never committed
            case "in progress":
                if !terminated, NIODeadline.now() - started >= terminateAfter {
                    terminated = true
                    terminate(transaction, tx)
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

    /// Ends the server process still running `transaction` (matched by process id and the low 32
    /// bits of the transaction id, so never another's), best effort and without recording a
    /// failure: a role that may not end it waits for the server to notice the lost connection, or
    /// for the deadline.
    private static func terminate(_ transaction: Transaction, _ tx: PostgresSession.Transaction) {
        var binds = PostgresBindings()
        binds.append(transaction.process)
        binds.append(String(UInt32(truncatingIfNeeded: transaction.id)))
        let sql = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND backend_xid::text = $2"
        _ = try? PostgresSession.wait(
            for: tx.connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: tx.logger),
            until: .now() + .milliseconds(Int64(tx.session.configuration.statementTimeoutSeconds * 1000)),
            doing: "ending the server process of a lost transaction", on: tx.connection)
    }
}
