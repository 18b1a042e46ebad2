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
/// transaction id and server process with its BEGIN (and the first on a connection the server's
/// run, `ServerProcess`), and after such a loss the client asks `txid_status` on a new connection (PostgreSQL's
/// documented way to settle it), outside any transaction.
///
/// On the same server run, `committed` and `aborted` are final. While it says `in progress`, the
/// client asks again; after `terminateAfter` it ends that server process if it sits idle in the
/// transaction (its own, matched by process id and transaction id): the COMMIT never reached it,
/// and ending it rolls the transaction back. A process working on the COMMIT (writing it, or
/// waiting for a synchronous standby to confirm it) is never ended, only asked about until the
/// deadline: ending it would cut short a standby's confirmation that the server would otherwise
/// have waited for.
///
/// After a restart, a crash recovery or a failover the answer is weaker: PostgreSQL does not log a
/// transaction id when it hands it out, so the id of a transaction whose log records were lost in
/// a crash is handed out again after recovery, and may have committed for another client by the
/// time the client asks. A committed transaction's id is never reused (its commit record is
/// durable), so `aborted`, or an id the server has not handed out yet, still means rolled back;
/// `committed` means committed *or reused*, which only the transaction's own writes can tell
/// apart (`Settled.committedOrReused`); `in progress` is asked again (it may be this transaction
/// still, if what changed the run was not a crash), and no process is ended.
enum CommitOutcome {
    /// How long a transaction may stay in progress before its server process is ended.
    static let terminateAfter = TimeAmount.milliseconds(500)

    /// What changes when the server restarts or recovers from a crash: its postmaster's start
    /// time, and the time its statistics were reset (a crash of one server process makes the
    /// postmaster end the others and recover without restarting itself, and recovery resets the
    /// statistics). A reset of the statistics without a crash reads as a restart too, which only
    /// makes the client more careful.
    struct ServerRun: Equatable, Sendable {
        let started: Date
        let statisticsReset: Date?
        static let columns = "pg_postmaster_start_time(), (SELECT stats_reset FROM pg_stat_bgwriter)"
    }

    /// The server process that ran a write transaction (learnt with its BEGIN: behind a pooler
    /// that moves transactions between server connections, each may run on another), and the
    /// server run it belongs to, learnt with the connection's first write transaction
    /// (`PostgresSession.serverRuns`): a crash ends every connection, so a later BEGIN on the same
    /// connection is in the same run. (A reset of the statistics during the connection's life
    /// makes each later lost COMMIT on it look like a restart: safe, only more careful; so does a
    /// pooler that moves the connection to another server.)
    struct ServerProcess: Sendable {
        /// `pg_backend_pid()`.
        let process: Int32
        let run: ServerRun
    }

    /// A write transaction as the server knows it.
    struct Transaction: Sendable {
        /// `txid_current()`: the transaction id with its epoch.
        let id: Int64
        let server: ServerProcess
    }

    /// What the server's record says about a transaction.
    enum Settled {
        case committed
        case rolledBack
        /// `committed`, after the server restarted: this transaction, or another that was given its
        /// id again after a crash lost this one.
        case committedOrReused
    }

    /// Begins a write transaction (READ COMMITTED) on `tx`'s connection, gives the server its
    /// timeouts (`Transaction.serverTimeouts`) and learns its id and server process (and, on the
    /// connection's first, the server's run), in one round trip (the id is assigned at once: the
    /// transaction writes anyway).
    static func begin(_ tx: PostgresSession.Transaction) throws(PostgresSession.PostgresFailure) -> Transaction {
        let knownRun = tx.session.serverRuns.withLock { $0[tx.connection.id] }
        var statements = [
            ("BEGIN ISOLATION LEVEL READ COMMITTED", PostgresBindings()), tx.serverTimeouts,
            ("SELECT txid_current(), pg_backend_pid()", PostgresBindings()),
        ]
        if knownRun == nil { statements.append(("SELECT \(ServerRun.columns)", PostgresBindings())) }
        let rows = try tx.pipeline(statements)
        let place = tx.session.configuration.displayName
        do {
            guard let idRow = rows[2].first else {
                throw RecordsError.storage(StorageFailure(.malformedStorage, "\(place): no transaction id from txid_current()"))
            }
            let (id, process) = try idRow.decodeChecked((Int64, Int32).self)
            if let knownRun { return Transaction(id: id, server: ServerProcess(process: process, run: knownRun)) }
            guard let runRow = rows[3].first else {
                throw RecordsError.storage(StorageFailure(.malformedStorage, "\(place): no answer about the server's run"))
            }
            let (started, statisticsReset) = try runRow.decodeChecked((Date, Date?).self)
            let run = ServerRun(started: started, statisticsReset: statisticsReset)
            let kept = 2 * tx.session.configuration.maximumConnections
            tx.session.serverRuns.withLock { known in
                known[tx.connection.id] = run
                if known.count > kept { for id in known.keys.sorted().prefix(known.count - kept) { known[id] = nil } }
            }
            return Transaction(id: id, server: ServerProcess(process: process, run: run))
        } catch let failure as PostgresSession.PostgresFailure {
            throw failure
        } catch {
            throw PostgresSession.PostgresFailure(error: error)
        }
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
            let status: String?
            let run: ServerRun
            do throws(PostgresSession.PostgresFailure) {
                let results = tx.pipelineResults([("SELECT txid_status($1)", binds), ("SELECT \(ServerRun.columns)", PostgresBindings())])
                do {
                    let runRows: [PostgresRow]
                    switch results[1] {
                    case .success(let rows):
                        runRows = rows
                    case .failure(let failure):
                        // Recorded even after the status's own failure: a lost connection is retried.
                        throw tx.failures.record(failure)
                    }
                    guard let runRow = runRows.first else {
                        throw RecordsError.storage(StorageFailure(.malformedStorage, "\(place): no answer about the server's run"))
                    }
                    let (startedAt, statisticsReset) = try runRow.decodeChecked((Date, Date?).self)
                    run = ServerRun(started: startedAt, statisticsReset: statisticsReset)
                    switch results[0] {
                    case .success(let rows):
                        status = try rows.first?.decodeChecked(String?.self) ?? nil
                    case .failure(let failure) where failure.sqlState == "22023":
                        status = "not yet given"  // an id this server run has not handed out ("in the future")
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
            let restarted = run != transaction.server.run
            switch status {
            case "committed":
                return restarted ? .committedOrReused : .committed
            case "aborted", "not yet given":
                return .rolledBack
            case "in progress":
                // After a restart, another transaction given the id again, or (if what changed the
                // run was not a crash) this one still: asked again, never ended.
                if !restarted, !terminated, NIODeadline.now() - started >= terminateAfter {
                    terminated = true
                    terminate(transaction, tx, until: deadline)
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

    /// Ends the server process still holding `transaction` idle (matched by process id and the low
    /// 32 bits of the transaction id, so never another's, and by its state, so never one working on
    /// the COMMIT; where `track_activities` is off, by its waiting to read from its client),
    /// best effort, without recording a failure,
    /// and waiting at most a statement's time or until `deadline`: a role that may not end it
    /// waits for the server to notice the lost connection, or for the deadline.
    private static func terminate(_ transaction: Transaction, _ tx: PostgresSession.Transaction, until deadline: NIODeadline) {
        var binds = PostgresBindings()
        binds.append(transaction.server.process)
        binds.append(String(UInt32(truncatingIfNeeded: transaction.id)))
        let sql = """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE pid = $1 AND backend_xid::text = $2
                AND (state LIKE 'idle in transaction%' OR (state = 'disabled' AND wait_event = 'ClientRead'))
            """
        let timeout = tx.session.configuration.statementTimeoutSeconds
        let statement = NIODeadline.now() + .milliseconds(Int64((timeout + PostgresSession.Transaction.statementGrace(timeout)) * 1000))
        _ = try? PostgresSession.wait(
            for: tx.connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: tx.logger),
            until: min(statement, deadline), doing: "ending the server process of a lost transaction", on: tx.connection)
    }
}
