import Foundation
import NIOCore
import SecureRecords

/// Copies batches of new records into one transaction from a thread of its own, so that the
/// server loads one group of records while the caller seals the next batch and the sender encodes
/// the group after it (`insertInOneTransaction`).
///
/// The batches queued while a copy runs are encoded and sent together by the next one (fewer round
/// trips), in groups of at most `PostgresRecordStorage.groupBytes`. At most `capacity` batches wait: a
/// caller that gets ahead of the server waits for room, so memory stays bounded. The room is what
/// sizes the groups when the server is the slower side: 64 batches (16,384 records from
/// `add(contentsOf:)`) make groups of about 8,000 records, a dozen for 100,000, where 16 made about
/// 26, and each `COPY` statement costs the server more than its rows (measured: about 0.06 s less
/// server CPU for 100,000 records, Benchmarks/README.md, session 24). The first failure
/// stops the sender, as soon as the copy fails; later batches are dropped (the transaction is then
/// rolled back or run again), and the failure is read from `failure` or `finish()`. Each batch the
/// sender takes counts as progress for the transaction's deadline (the caller sealed it). The
/// transaction is used by the sender's thread alone from `init` until `finish()` returns.
final class CopySender: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [[StoredRecord]] = []
    private var finishing = false
    private var discarded = false
    private var running = true
    /// The number of the copy last started, and of the last one that ended.
    private var copiesStarted = 0
    private var copiesEnded = 0
    private var stored: RecordsError?
    private let capacity = 64
    private let storage: PostgresRecordStorage
    private let transaction: PostgresRecordStorage.Transaction

    init(storage: PostgresRecordStorage, transaction: PostgresRecordStorage.Transaction) {
        self.storage = storage
        self.transaction = transaction
        let thread = Thread { [self] in run() }
        thread.name = "SecureRecordsPostgres.copy"
        thread.start()
    }

    /// The failure that stopped the sender, if one did.
    var failure: RecordsError? {
        condition.withLock { stored }
    }

    /// Queues `batch` (not empty, ids distinct), waiting while `capacity` batches wait; dropped
    /// once the sender has failed.
    func send(_ batch: [StoredRecord]) {
        condition.withLock {
            while queue.count >= capacity && stored == nil { condition.wait() }
            guard stored == nil else { return }
            queue.append(batch)
            condition.broadcast()
        }
    }

    /// Waits until every queued batch is copied (or the sender failed); the failure, if any. With
    /// `discarding` (the load failed), only the copy in flight is waited for: the rest is dropped.
    func finish(discarding: Bool = false) -> RecordsError? {
        condition.withLock {
            finishing = true
            if discarding {
                discarded = true
                queue.removeAll()
            }
            condition.broadcast()
            while running { condition.wait() }
            return stored
        }
    }

    private func run() {
        // The copy in flight: the next group is encoded while the server loads it.
        var inFlight: (copying: CopyInProgress, rows: PostgresCopyRows)?
        do throws(RecordsError) {
            while true {
                let next = take(awaitingCopy: inFlight != nil)
                // Settle the copy in flight when it ended (a failure stops the caller at once) and
                // when finishing; new records are encoded first, while it runs.
                if let (copying, previous) = inFlight, next.copyEnded || next.finished {
                    inFlight = nil
                    try storage.finishCopy(copying, of: previous, transaction)
                }
                guard let records = next.records else {
                    if next.finished { break }
                    continue
                }
                transaction.deadline.progressed()
                for group in PostgresRecordStorage.groups(records) {
                    // A load that failed copies nothing more.
                    if condition.withLock({ discarded }) { break }
                    let rows = PostgresCopyRows(group)
                    if let (copying, previous) = inFlight {
                        inFlight = nil
                        try storage.finishCopy(copying, of: previous, transaction)
                    }
                    let copying = storage.startCopy(rows, transaction)
                    inFlight = (copying, rows)
                    let number = condition.withLock {
                        copiesStarted += 1
                        return copiesStarted
                    }
                    copying.ended.whenComplete { [self] _ in
                        condition.withLock {
                            copiesEnded = number
                            condition.broadcast()
                        }
                    }
                }
            }
        } catch {
            condition.withLock {
                stored = error
                queue.removeAll()
                condition.broadcast()
            }
        }
        condition.withLock {
            running = false
            condition.broadcast()
        }
    }

    /// Waits for queued batches, the end of the copy in flight (`awaitingCopy`), or finishing; the
    /// queued records (nil for none), whether the copy in flight ended, and whether finishing.
    private func take(awaitingCopy: Bool) -> (records: [StoredRecord]?, copyEnded: Bool, finished: Bool) {
        condition.withLock {
            func ended() -> Bool { awaitingCopy && copiesEnded == copiesStarted }
            while queue.isEmpty && !finishing && !ended() { condition.wait() }
            guard !queue.isEmpty else { return (nil, ended(), finishing) }
            defer { queue.removeAll(keepingCapacity: true); condition.broadcast() }
            return (Array(queue.joined()), ended(), finishing)
        }
    }
}
