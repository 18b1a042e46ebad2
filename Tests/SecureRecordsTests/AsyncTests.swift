import Foundation
import SFTestSupport
import SecureCore
import Testing

@testable import SecureRecords
@testable import SecureRecordsPostgres

/// `RecordStore.async`: every call awaited does what its synchronous namesake does, and a call
/// waiting in the server leaves the awaiting task's thread to other tasks.
@Suite struct AsyncTests {
    /// The store's life through its async calls, on both backends: each result is the synchronous
    /// call's, and each error the same typed error.
    @Test(arguments: Backend.enabled)
    func everyCallAwaitedDoesWhatItsSynchronousNamesakeDoes(_ backend: Backend) async throws {
        let scratch = try RecordsScratch(backend)
        let store = try RecordStore(storage: try scratch.storage(), configuration: testConfiguration)
        let calls = store.async
        try await calls.createCollection("gifts", schema: giftSchema)
        #expect(try await calls.collections() == ["gifts": giftSchema])
        #expect(try await calls.schema(of: "gifts") == giftSchema)
        try await calls.unlock(with: appSealer)
        #expect(store.isUnlocked)

        let id = try await calls.add(["toWhom": .string("Ann"), "description": .string("a scarf"), "ssn": .string("1")], to: "gifts")
        let more = try await calls.add(
            contentsOf: (0..<300).map { ["toWhom": .string("n\($0)"), "ssn": .string("\($0 % 3)")] }, to: "gifts")
        #expect(more.count == 300)
        #expect(try await calls.record(id).fields["description"] == nil)
        #expect(try await calls.open(id).fields["description"] == .string("a scarf"))
        try await calls.update(id, setting: ["note": .string("wrapped")], removing: ["description"])
        #expect(try await calls.open(id).fields == ["toWhom": .string("Ann"), "note": .string("wrapped"), "ssn": .string("1")])
        let ones = try await calls.search(in: "gifts", [.equals(field: "ssn", value: .string("1"))]).map(\.id)
        #expect(Set(ones) == Set([id] + more.enumerated().filter { $0.offset % 3 == 1 }.map(\.element)))

        let locked = try await calls.add(["toWhom": .string("Bo"), "description": .string("a book")], to: "gifts", sealing: .password(secret("pw")))
        try await calls.changePassword(of: locked, from: secret("pw"), to: secret("new pw"))
        #expect(try await calls.open(locked, password: secret("new pw")).fields["description"] == .string("a book"))
        do throws(RecordsError) {
            _ = try await calls.open(locked, password: secret("pw"))
            Issue.record("the old password opened the record")
        } catch {
            guard case .authenticationFailed(locked, _) = error else { throw error }
        }

        // The calls run on the store's own threads (seen from the callbacks they make).
        let threads = Locked<Set<String>>([])
        let batches = Locked<[Int]>([])
        let rotation = try await calls.rotateStoreKey(with: appSealer) { count in
            batches.withLock { $0.append(count) }
            _ = threads.withLock { $0.insert(Thread.current.name ?? "") }
        }
        #expect(rotation.resealed == 301)
        #expect(batches.withLock { $0.last } == 301)  // the count so far, after each batch
        #expect(try await calls.rewrapKeys(with: appSealer).count == 2)
        #expect(try await calls.wrappedKeys().currentKeyId == rotation.keyId)
        #expect(try await calls.open(id).fields["note"] == .string("wrapped"))

        // Export, delete everything, and import it back.
        let path = scratch.path("export.jsonl")
        #expect(try await TestSupport.onOwnThread { try OutputDestination.write(to: path) { try store.export(to: $0) } } == 302)
        for record in try await calls.search(in: "gifts") { try await calls.delete(record.id) }
        await #expect(throws: RecordsError.recordNotFound(id)) { try await calls.delete(id) }
        await #expect(throws: RecordsError.recordNotFound(id)) { _ = try await calls.record(id) }
        let reported = Locked<[RecordStore.ImportProgress]>([])
        #expect(try await calls.importFile(atPath: path) { progress in
            reported.withLock { $0.append(progress) }
            _ = threads.withLock { $0.insert(Thread.current.name ?? "") }
        } == 302)
        #expect(threads.withLock { $0 } == ["SecureRecords"])
        #expect(reported.withLock { $0.last?.records } == 302)
        #expect(try await calls.open(id).fields["note"] == .string("wrapped"))
        #expect(try await calls.search(in: "gifts").count == 302)
    }

    /// Four adds wait in PostgreSQL for a table lock, two on the storage's two connections and two
    /// in the store's queue, all awaited from tasks on one single thread. Another task on that
    /// thread still runs while they wait: it sees them waiting in the server, and only then lets
    /// them go. Had an add blocked the thread (the synchronous call inside a task), that task could
    /// only run after the lock was let go by the fallback deadline, and the order would be reversed.
    @Test(.requires(.postgres))
    func awaitingCallsBlockedInTheServerLeavesTheThreadFree() async throws {
        let scratch = try RecordsScratch(.postgres)
        _ = try makeStore(scratch)
        var configuration = try #require(try scratch.storage() as? PostgresRecordStorage).configuration
        configuration.maximumConnections = 2
        // Deadlines well past the fallback below, so that only a broken offload lets the lock go.
        // (A whole-suite run on two busy cores starved this test's tasks for minutes: the locker's
        // lock wait, 2 s under the statement deadline, ran out first.)
        configuration.statementTimeoutSeconds = 900
        configuration.transactionTimeoutSeconds = 900
        let store = try RecordStore(storage: try PostgresRecordStorage(configuration: configuration), configuration: testConfiguration)
        try store.unlock(with: appSealer)
        #expect(store.storage.concurrentCalls == 2)
        #expect(store.blockingCalls.width == 2)  // two adds run, two wait in the store's queue
        _ = try store.search(in: "gifts")  // the collection is known: an add is then one transaction

        configuration.maximumConnections = 1
        let holder = try PostgresRecordStorage(configuration: configuration)  // one connection: its session lock stays on it
        let admin = try PostgresRecordStorage(configuration: configuration)
        let locker = try PostgresRecordStorage(configuration: configuration)
        let records = store.storage as! PostgresRecordStorage
        let key = Int64.random(in: 1...Int64.max)
        try holder.execute("SELECT pg_advisory_lock(\(key))")
        let released = Locked(false)
        @Sendable func release() throws {
            guard released.withLock({ (done: inout Bool) -> Bool in defer { done = true }; return !done }) else { return }
            try holder.execute("SELECT pg_advisory_unlock(\(key))")
        }
        // The locker takes the records table, then waits for the holder's lock.
        let lockerDone = DispatchGroup()
        let lockerError = Locked<String?>(nil)
        lockerDone.enter()
        Thread {
            do {
                try locker.execute(
                    "DO $$ BEGIN LOCK TABLE \(records.tableName("records")) IN EXCLUSIVE MODE; PERFORM pg_advisory_xact_lock(\(key)); END $$")
            } catch {
                lockerError.withLock { $0 = "\(error)" }
            }
            lockerDone.leave()
        }.start()
        let advisoryWaits = "SELECT count(*)::text FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = \(UInt32(truncatingIfNeeded: key))"
        try await waitUntil(admin, advisoryWaits, is: "1")
        // The fallback: a broken offload would otherwise wait for the lock forever. Well past
        // what a starved test task may take to go on (the statements' own deadlines are 900 s).
        DispatchQueue.global().asyncAfter(deadline: .now() + 600) { try? release() }

        let events = EventLog()
        let executor = QueueExecutor(width: 1, label: "AsyncTests.single-thread")
        let ids = (0..<4).map { _ in UUID() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for id in ids {
                group.addTask(executorPreference: executor) {
                    _ = try await store.async.add(["toWhom": .string("queued")], to: "gifts", id: id)
                    events.append("add")
                }
            }
            group.addTask(executorPreference: executor) {
                let waiting = """
                    SELECT count(*)::text FROM pg_locks WHERE relation = '\(records.tableName("records"))'::regclass AND NOT granted
                    """
                try await waitUntil(admin, waiting, is: "2")
                events.append("other task")
                try await TestSupport.onOwnThread { try release() }
            }
            try await group.waitForAll()
        }
        #expect(events.entries == ["other task", "add", "add", "add", "add"])
        #expect(try await TestSupport.onOwnThread { lockerDone.wait(timeout: .now() + 60) } == .success)
        #expect(lockerError.withLock { $0 } == nil)
        #expect(Set(try store.search(in: "gifts").map(\.id)) == Set(ids))
    }

    /// Polls `sql` until its one value is `value`, for at most 540 s (then records an issue, with
    /// what the server's other sessions are waiting for, and returns). It takes milliseconds alone.
    /// The whole loop runs on a thread of its own: a task resumed between polls waits for one of
    /// the two cooperative threads, which other suites' blocking tests held for over 180 s in
    /// whole-suite runs, so the wait used to end without looking again (the condition had held
    /// for minutes: the session awaited was seen waiting for the lock).
    func waitUntil(_ storage: PostgresRecordStorage, _ sql: String, is value: String) async throws {
        let reached = try await TestSupport.onOwnThread { () throws -> Bool in
            let deadline = Date().addingTimeInterval(540)
            while try storage.queryText(sql) != [value] {
                guard Date() < deadline else { return false }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return true
        }
        guard !reached else { return }
        let sessions = try await TestSupport.onOwnThread {
            try storage.queryText(
                "SELECT string_agg(pid || ' ' || backend_type || ' ' || coalesce(state, '-') || ' ' || coalesce(wait_event_type, '-') || ' ' "
                    + "|| coalesce(wait_event, '-') || ' ' || coalesce(left(query, 60), '-') || ' holds ' || coalesce((SELECT string_agg("
                    + "coalesce(l.relation::regclass::text, l.locktype) || ':' || l.mode, ',') FROM pg_locks l WHERE l.pid = a.pid AND l.granted "
                    + "AND l.locktype IN ('relation', 'advisory')), '-'), '; ') "
                    + "FROM pg_stat_activity a WHERE pid <> pg_backend_pid()")
        }
        Issue.record("\(sql) did not give \(value) within 540 s; sessions: \(sessions)")
    }
}
