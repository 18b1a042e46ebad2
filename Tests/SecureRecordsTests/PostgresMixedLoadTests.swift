import Foundation
import NIOCore
import SFTestSupport
@testable import SecureRecords
@testable import SecureRecordsPostgres
import SecureCore
import Testing

/// Many clients on one PostgreSQL store for 30 s: 16 async clients (tasks) sharing one
/// `RecordStore` through `RecordStore.async` (so one storage's connection pool, 8 connections for
/// 16 clients) and 8 `sf` processes at once, adding, updating, searching and rotating the store key. Nothing acknowledged is lost, nothing is stored
/// twice, every search finds every add acknowledged before it started, and at the end every record
/// is under the store's current key.
@Suite struct PostgresMixedLoadTests {
    static let seconds = 30.0
    static let tasks = 16
    static let processes = 8

    /// What the clients were told, and what went wrong.
    final class Ledger: Sendable {
        /// Async clients' records: id → the `note` last acknowledged.
        let notes = Locked<[UUID: String]>([:])
        /// Process clients' records, by client.
        let processIds = Locked<[Int: [String]]>([:])
        let failures = Locked<[String]>([])
        let counts = Locked<[String: Int]>([:])

        func fail(_ text: String) { failures.withLock { $0.append(text) } }
        func count(_ operation: String) { counts.withLock { $0[operation, default: 0] += 1 } }
    }

    @Test(.requires(.postgres), .requiresSFBinary) func sixteenAsyncClientsAndEightProcessesMixingOperationsLoseNothing() async throws {
        let scratch = try RecordsScratch(.postgres)
        let configuration = RecordStore.Configuration(passwordKDF: testKDF, rotationBatchSize: 256)
        _ = try makeStore(scratch)  // the `gifts` collection
        let shared = try scratch.reopen(configuration: configuration)
        try shared.unlock(with: appSealer)
        let url = try #require(TestSupport.postgresURL) + "?schema=\(scratch.schema)&prefix=\(RecordsScratch.prefix("store.db"))"
        let keyFile = try appKey.withUnsafeBytes { try scratch.write("app.key", Data($0)) }
        let passwordFile = try scratch.write("pg.pw", Data(((TestSupport.postgresPassword ?? "") + "\n").utf8))
        let location = ["--postgres", url, "--postgres-password-file", passwordFile]

        let ledger = Ledger()
        let end = Date(timeIntervalSinceNow: Self.seconds)
        // A thread for each process client (it waits on its `sf` process); a task for each async client.
        let processes = DispatchGroup()
        for client in 0..<Self.processes {
            processes.enter()
            Thread {
                Self.processClient(client, location: location, keyFile: keyFile, ledger: ledger, until: end)
                processes.leave()
            }.start()
        }
        // The tasks run on threads of their own, as a server's would: the synchronous tests of other
        // suites in this process hold Swift's cooperative threads while they block.
        let executor = QueueExecutor(width: 4, label: "PostgresMixedLoadTests")
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<Self.tasks {
                group.addTask(executorPreference: executor) { await Self.asyncClient(client, store: shared, ledger: ledger, until: end) }
            }
        }
        // Each client stops starting operations at `end`; one operation's deadlines bound the rest.
        #expect(try await TestSupport.onOwnThread { processes.wait(timeout: .now() + Self.seconds + 300) } == .success)
        let failures = ledger.failures.withLock { $0 }
        #expect(failures.isEmpty, "\(failures.prefix(10))")
        let counts = ledger.counts.withLock { $0 }
        print("mixed load over \(Int(Self.seconds)) s: \(counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        // Every kind of operation ran, by both kinds of client.
        for operation in ["task add", "task update", "task search", "task full search", "rotation", "process add", "process search", "process rotation"] {
            #expect(counts[operation, default: 0] > 0, "no \(operation) ran: \(counts)")
        }

        // A new client sees exactly what was acknowledged: no loss, no extra, no duplicate.
        let store = try scratch.reopen(configuration: configuration)
        try store.unlock(with: appSealer)
        let notes = ledger.notes.withLock { $0 }
        let gifts = try store.search(in: "gifts").map(\.id)
        #expect(gifts.count == Set(gifts).count)
        #expect(Set(gifts) == Set(notes.keys))
        for (id, note) in notes {
            let record = try store.open(id)
            #expect(record.fields["note"] == .string(note))
            #expect(record.fields["description"] == .string("sealed \(id)"))
        }
        // Every rotation ran to its end, and no write committed under a key older than one made
        // current before it: the whole store is under the current key.
        let current = try #require(try store.storage.loadMetadata()?.currentKeyId)
        #expect(try store.storage.records(withKeyIdOtherThan: current, after: 0, limit: 1).records.isEmpty)
        let printed = ledger.processIds.withLock { $0 }.values.flatMap { $0 }
        #expect(printed.count == Set(printed).count)
        let sharedIds = try store.search(in: "shared").map { $0.id.uuidString.lowercased() }
        #expect(sharedIds.count == Set(sharedIds).count)
        #expect(Set(sharedIds) == Set(printed))
        for id in sharedIds.prefix(50) {
            #expect(try store.open(try #require(UUID(uuidString: id))).fields["note"] != nil)
        }
    }

    /// One storage runs calls from several threads at once, one pooled connection each: a call
    /// goes through while another waits on a lock in the server.
    @Test(.requires(.postgres)) func aStorageServesCallsFromSeveralThreadsAtOnce() throws {
        let scratch = try RecordsScratch(.postgres)
        let (configuration, storage, holder, key) = try Self.heldLock(scratch) { $0.maximumConnections = 2 }
        let blocked = DispatchGroup()
        let blockedResult = Locked<String?>(nil)
        DispatchQueue.global().async(group: blocked) {
            do {
                try storage.execute("SELECT pg_advisory_xact_lock(\(key))")
                blockedResult.withLock { $0 = "acquired" }
            } catch {
                blockedResult.withLock { $0 = "\(error)" }
            }
        }
        // Wait (an event, not a pause) until the first call waits for the lock in the server.
        let waiting = "SELECT count(*)::text FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = \(UInt32(truncatingIfNeeded: key))"
        let observe = try PostgresRecordStorage(configuration: configuration)
        var polls = 0
        while try observe.queryText(waiting) != ["1"] {
            polls += 1
            try #require(polls < 3000, "the first call never reached the lock")
            usleep(10_000)
        }
        // Its one connection is busy; the storage's second connection answers this thread.
        #expect(try storage.queryText("SELECT 'second'") == ["second"])
        #expect(blockedResult.withLock { $0 } == nil)
        try holder.execute("SELECT pg_advisory_unlock(\(key))")
        #expect(blocked.wait(timeout: .now() + 60) == .success)
        #expect(blockedResult.withLock { $0 } == "acquired")
    }

    /// A wait for a lock ends in the server before the client's statement deadline: a typed error
    /// with SQLSTATE 55P03 (the storage sets `lock_timeout` 2 s below `statement_timeout`), not a
    /// connection taken for lost and a transaction run again.
    @Test(.requires(.postgres)) func aLockWaitEndsWithTheServersLockTimeout() throws {
        let scratch = try RecordsScratch(.postgres)
        let (_, storage, holder, key) = try Self.heldLock(scratch) { $0.statementTimeoutSeconds = 4 }
        defer { _ = try? holder.execute("SELECT pg_advisory_unlock(\(key))") }
        let failure = try #require(throws: RecordsError.self) { try storage.execute("SELECT pg_advisory_xact_lock(\(key))") }
        guard case .storage(let storageFailure) = failure else { throw failure }
        #expect(storageFailure.sqlState == "55P03", "\(storageFailure)")
    }

    /// The scratch store's configuration changed by `adjust`, a storage with it, and another (the
    /// holder) whose idle connection holds a session-level advisory lock on the random `key`.
    static func heldLock(
        _ scratch: RecordsScratch, _ adjust: (inout PostgresRecordStorage.Configuration) -> Void
    ) throws -> (PostgresRecordStorage.Configuration, PostgresRecordStorage, PostgresRecordStorage, Int64) {
        var configuration = try #require(try scratch.storage() as? PostgresRecordStorage).configuration
        adjust(&configuration)
        let storage = try PostgresRecordStorage(configuration: configuration)
        let holder = try PostgresRecordStorage(configuration: configuration)
        let key = Int64.random(in: 1...Int64.max)
        try holder.execute("SELECT pg_advisory_lock(\(key))")
        return (configuration, storage, holder, key)
    }

    /// The pool: a lease beyond its size waits, until a lease ends or its deadline passes.
    @Test func aLeaseBeyondThePoolSizeWaitsUntilOneEndsOrItsDeadline() throws {
        let pool = ConnectionPool(size: 1)
        #expect(try pool.lease(until: NIODeadline.now() + .seconds(5)) == nil)  // an empty slot: the caller connects
        #expect(throws: ConnectionPool.Exhausted.self) { _ = try pool.lease(until: NIODeadline.now() + .milliseconds(50)) }
        let waiter = DispatchGroup()
        let leased = Locked(false)
        let started = DispatchSemaphore(value: 0)
        DispatchQueue.global().async(group: waiter) {
            started.signal()
            do {
                _ = try pool.lease(until: NIODeadline.now() + .seconds(120))
                leased.withLock { $0 = true }
            } catch {}
        }
        started.wait()
        pool.giveBack(nil)
        #expect(waiter.wait(timeout: .now() + 60) == .success)
        #expect(leased.withLock { $0 })
    }

    /// One async client: adds, updates its own records, searches them by blind index (and client 0
    /// the whole collection), and the last client rotates the store key every few seconds.
    static func asyncClient(_ client: Int, store: RecordStore, ledger: Ledger, until end: Date) async {
        let store = store.async
        var mine: [UUID] = []
        var iteration = 0
        var nextRotation = Date(timeIntervalSinceNow: 3)
        var rotated = false
        // Past `end` only until each kind of operation ran once (add, update, search, client 0's
        // search of the collection, the last client's rotation): the checks below hold however busy
        // the machine is.
        while Date() < end || iteration < 4 || (client == tasks - 1 && !rotated) {
            iteration += 1
            do {
                if client == tasks - 1, Date() >= nextRotation || (Date() >= end && !rotated) {
                    rotated = true
                    _ = try await store.rotateStoreKey(with: appSealer)
                    ledger.count("rotation")
                    nextRotation = Date(timeIntervalSinceNow: 5)
                    continue
                }
                switch iteration % 4 {
                case 0, 1:
                    let id = UUID()
                    _ = try await store.add(
                        ["toWhom": .string("t\(client)"), "note": .string("v0"), "description": .string("sealed \(id)"),
                         "ssn": .string("s\(client)")], to: "gifts", id: id)
                    mine.append(id)
                    ledger.notes.withLock { $0[id] = "v0" }
                    ledger.count("task add")
                case 2:
                    guard let id = mine.randomElement() else { continue }
                    try await store.update(id, setting: ["note": .string("v\(iteration)")])
                    ledger.notes.withLock { $0[id] = "v\(iteration)" }
                    ledger.count("task update")
                default:
                    let expected = Set(mine)
                    let found = try await store.search(in: "gifts", [.equals(field: "ssn", value: .string("s\(client)"))]).map(\.id)
                    if found.count != Set(found).count || Set(found) != expected {
                        ledger.fail("task \(client): its search found \(found.count) records, \(expected.count) acknowledged")
                    }
                    ledger.count("task search")
                    if client == 0, iteration % 20 == 3 {
                        let acknowledged = Set(ledger.notes.withLock { $0.keys })
                        let all = try await store.search(in: "gifts").map(\.id)
                        if all.count != Set(all).count || !acknowledged.isSubset(of: Set(all)) {
                            ledger.fail("task 0: a search of the collection missed records acknowledged before it")
                        }
                        ledger.count("task full search")
                    }
                }
            } catch {
                ledger.fail("task \(client), iteration \(iteration): \(error)")
                return
            }
        }
    }

    /// One process client: runs `sf records add` (10 records a process), `sf records search` of its
    /// own records, and (client 7) `sf records rotate-key`, one process after another.
    static func processClient(_ client: Int, location: [String], keyFile: String, ledger: Ledger, until end: Date) {
        var mine: [String] = []
        var iteration = 0
        // Past `end` only until add, search and (client 7) rotate-key each ran once.
        while Date() < end || iteration < 4 {
            iteration += 1
            do {
                if client == processes - 1, iteration % 4 == 0 {
                    let result = try sf(["records", "rotate-key"] + location + ["--key-file", keyFile])
                    guard result.status == 0 else { return ledger.fail("process rotate-key: \(result.stderrText)") }
                    ledger.count("process rotation")
                } else if iteration % 3 == 0 {
                    let result = try sf(
                        ["records", "search"] + location + ["--key-file", keyFile, "--collection", "shared", "--json", "code=p\(client)"])
                    guard result.status == 0 else { return ledger.fail("process search: \(result.stderrText)") }
                    let found = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]])
                        .compactMap { $0["id"] as? String }
                    if found.count != Set(found).count || Set(found) != Set(mine) {
                        ledger.fail("process \(client): its search found \(found.count) records, \(mine.count) acknowledged")
                    }
                    ledger.count("process search")
                } else {
                    let result = try sf(
                        ["records", "add"] + location + [
                            "--collection", "shared", "--key-file", keyFile, "--field", "writer=p\(client)", "--indexed", "code=p\(client)",
                            "--sealed", "note=n\(client)", "--repeat-count", "10",
                        ])
                    let ids = result.stdoutText.split(separator: "\n").map(String.init)
                    mine += ids
                    ledger.processIds.withLock { $0[client] = mine }
                    guard result.status == 0, ids.count == 10 else { return ledger.fail("process add: \(result.stderrText)") }
                    ledger.count("process add")
                }
            } catch {
                return ledger.fail("process \(client): \(error)")
            }
        }
    }
}
