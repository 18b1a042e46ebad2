import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureCore
import Testing

@Suite struct KeyChangeTests {
    @Test(arguments: Backend.enabled)
    func changePassword(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch, unlock: false)
        let id = try store.add(["toWhom": "Alice", "description": "bike", "blob": .bytes(Data([1]))], to: "gifts", sealing: .password(secret("old")))
        let before = try #require(try store.storage.record(id))
        #expect(throws: RecordsError.authenticationFailed(record: id, field: "blob")) {
            try store.changePassword(of: id, from: secret("wrong"), to: secret("new"))
        }
        #expect(try store.storage.record(id) == before)  // nothing changed
        try store.changePassword(of: id, from: secret("old"), to: secret("new"))
        #expect(throws: RecordsError.self) { try store.open(id, password: secret("old")) }
        #expect(try store.open(id, password: secret("new")).fields == ["toWhom": "Alice", "description": "bike", "blob": .bytes(Data([1]))])
    }

    /// Opens each record's sealed values with exactly one of the store's keys.
    static func keysOpeningEachRecord(_ store: RecordStore) throws -> [UUID: [UInt32]] {
        let metadata = try #require(try store.storage.loadMetadata())
        var keys: [UInt32: SecretBytes] = [:]
        for wrapped in metadata.keys {
            let plaintext = try appSealer.open(wrapped.wrapped, context: RecordContext.keyWrap(storeId: store.storeId, keyId: wrapped.id))
            keys[wrapped.id] = SecretBytes(plaintext.prefix(Envelope.keyByteCount))  // then the authenticating flag
        }
        var result: [UUID: [UInt32]] = [:]
        for record in try store.storage.allRecords(after: 0, limit: 100_000).records where record.keying == .storeKey {
            var opening: [UInt32] = []
            for (id, key) in keys.sorted(by: { $0.key < $1.key }) {
                let all = record.sealed.allSatisfy { name, sealed in
                    (try? Envelope.open(sealed, key: key, context: store.context(record.collection, record.id, name))) != nil
                }
                if all { opening.append(id) }
            }
            result[record.id] = opening
        }
        return result
    }

    @Test(arguments: Backend.enabled)
    func rotateStoreKeyInProcess(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        var ids: [UUID] = []
        for i in 0..<10 { ids.append(try store.add(["toWhom": .string("p\(i)"), "description": .string("d\(i)"), "ssn": .string("s\(i % 3)")], to: "gifts")) }
        let password = try store.add(["toWhom": "pw", "description": "kept"], to: "gifts", sealing: .password(secret("pw")))
        var batches: [Int] = []
        let rotation = try store.rotateStoreKey(with: appSealer) { batches.append($0) }
        #expect(rotation == KeyRotation(keyId: 2, resealed: 10, resumed: false))
        #expect(batches == [3, 6, 9, 10])
        let opening = try Self.keysOpeningEachRecord(store)
        #expect(opening.count == 10)
        #expect(opening.values.allSatisfy { $0 == [2] })
        for (i, id) in ids.enumerated() { #expect(try store.open(id).fields["description"] == .string("d\(i)")) }
        #expect(try store.search(in: "gifts", [.equals(field: "ssn", value: "s1")]).count == 3)  // i = 1, 4, 7
        #expect(try store.open(password, password: secret("pw")).fields["description"] == "kept")
        // A second rotation adds key 3.
        #expect(try store.rotateStoreKey(with: appSealer).keyId == 3)
    }

    /// Simulates a crash between batches (a backend that fails its second batch): some rows on the
    /// new key, some on the old; each opens with exactly one; a re-run finishes without a new key.
    @Test(arguments: Backend.enabled)
    func interruptedRotationResumes(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        for i in 0..<7 { _ = try store.add(["description": .string("d\(i)"), "ssn": "x"], to: "gifts") }
        let failing = FailingStorage(try scratch.storage("store.db"), failReplaceAfter: 1)
        let crashing = try RecordStore(storage: failing, configuration: testConfiguration)
        #expect(throws: RecordsError.storage(StorageFailure(.sqlite(code: 10), "injected failure"))) { try crashing.rotateStoreKey(with: appSealer) }
        let opening = try Self.keysOpeningEachRecord(store)
        #expect(opening.values.allSatisfy { $0.count == 1 })
        #expect(opening.values.filter { $0 == [2] }.count == 3)
        // Search mid-rotation finds rows under both keys.
        let reopened = try scratch.reopen()
        try reopened.unlock(with: appSealer)
        #expect(try reopened.search(in: "gifts", [.equals(field: "ssn", value: "x")]).count == 7)
        let resumed = try reopened.rotateStoreKey(with: appSealer)
        #expect(resumed == KeyRotation(keyId: 2, resealed: 4, resumed: true))
        #expect(try Self.keysOpeningEachRecord(reopened).values.allSatisfy { $0 == [2] })
    }

    /// Rotation pages its batches by position: a record written back under the old key behind the
    /// rotation's position (as by a client that read it before the rotation reached it and wrote it
    /// after), or sealed under the old key before the rotation began and stored during it, is still
    /// rotated, by the pass from the start that ends every rotation.
    @Test(arguments: Backend.enabled)
    func recordsWrittenUnderTheOldKeyDuringARotationAreRotated(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        var ids: [UUID] = []
        for i in 0..<10 { ids.append(try store.add(["description": .string("d\(i)"), "ssn": "x"], to: "gifts")) }
        let base = try scratch.storage("store.db")
        let original = try #require(try base.record(ids[0]))
        #expect(original.keyId == 1)
        let late = try store.add(["description": "sealed before the rotation, stored during it", "ssn": "x"], to: "gifts")
        let lateRow = try #require(try base.record(late))
        #expect(try base.delete(late))
        let rotating = FailingStorage(base, failReplaceAfter: .max) { count in
            guard count == 2 else { return }
            // Two batches of three are under key 2 by now, the first record among them.
            do {
                try base.replace([original])
                try base.insert([lateRow])
            } catch {
                Issue.record(error)
            }
        }
        let rotation = try RecordStore(storage: rotating, configuration: testConfiguration).rotateStoreKey(with: appSealer)
        #expect(rotation.keyId == 2 && rotation.resealed == 12)
        let opening = try Self.keysOpeningEachRecord(store)
        #expect(opening.count == 11)
        #expect(opening.values.allSatisfy { $0 == [2] })
        let reopened = try scratch.reopen()
        try reopened.unlock(with: appSealer)
        #expect(try reopened.open(ids[0]).fields["description"] == "d0")
        #expect(try reopened.search(in: "gifts", [.equals(field: "ssn", value: "x")]).count == 11)
    }
    /// A key another client makes current during a rotation (it rotated again) is taken up: the
    /// rotation goes on under it, from the start, and every record ends under it.
    @Test(arguments: Backend.enabled)
    func aRotationTakesUpAKeyMadeCurrentMeanwhile(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        for i in 0..<10 { _ = try store.add(["description": .string("d\(i)"), "ssn": "x"], to: "gifts") }
        let base = try scratch.storage("store.db")
        let other = try scratch.reopen()
        let rotating = FailingStorage(base, failReplaceAfter: .max) { count in
            guard count == 2 else { return }
            do {
                #expect(try base.addKey(try other.wrap(SecretBytes.random(count: 32), id: 3, sealer: appSealer), makeCurrent: true))
            } catch {
                Issue.record(error)
            }
        }
        let rotation = try RecordStore(storage: rotating, configuration: testConfiguration).rotateStoreKey(with: appSealer)
        // Three under key 2; the next batch, sealed under key 2 when key 3 was current, is refused
        // in its transaction; then all ten under key 3.
        #expect(rotation.keyId == 3 && rotation.resealed == 13, "\(rotation)")
        #expect(try Self.keysOpeningEachRecord(store).values.allSatisfy { $0 == [3] })
        let reopened = try scratch.reopen()
        try reopened.unlock(with: appSealer)
        #expect(try reopened.search(in: "gifts", [.equals(field: "ssn", value: "x")]).count == 10)
    }
}

/// A backend that forwards to another, fails the conditional `replace` (a rotation's batch, an
/// update's write) after `failReplaceAfter` successful calls, and runs `beforeReplace` and
/// `afterReplace` with the count around each one (as another client writing at that moment).
final class FailingStorage: RecordStorage, @unchecked Sendable {
    let base: any RecordStorage
    let limit: Int
    let afterReplace: (Int) -> Void
    let beforeReplace: (Int) -> Void
    private var replaces = 0
    private let lock = NSLock()

    init(
        _ base: any RecordStorage, failReplaceAfter limit: Int, beforeReplace: @escaping (Int) -> Void = { _ in },
        afterReplace: @escaping (Int) -> Void = { _ in }
    ) {
        self.base = base
        self.limit = limit
        self.beforeReplace = beforeReplace
        self.afterReplace = afterReplace
    }

    /// Returned by the next `loadMetadata` instead of what is stored (a read that another client's
    /// write then overtook).
    let staleMetadata = Locked<StoreMetadata?>(nil)

    /// How many times the metadata was read by `loadMetadata` (not inside a conditional insert).
    let metadataReads = Locked(0)

    func loadMetadata() throws(RecordsError) -> StoreMetadata? {
        metadataReads.withLock { $0 += 1 }
        if let stale = staleMetadata.withLock({ (next: inout StoreMetadata?) -> StoreMetadata? in defer { next = nil }; return next }) {
            return stale
        }
        return try base.loadMetadata()
    }
    func initialize(_ metadata: StoreMetadata) throws(RecordsError) -> StoreMetadata { try base.initialize(metadata) }
    func addKey(_ key: WrappedStoreKey, makeCurrent: Bool) throws(RecordsError) -> Bool { try base.addKey(key, makeCurrent: makeCurrent) }
    func rewrapKeys(_ keys: [WrappedStoreKey]) throws(RecordsError) { try base.rewrapKeys(keys) }
    func createCollection(_ collection: String, schema: RecordSchema) throws(RecordsError) -> RecordSchema {
        try base.createCollection(collection, schema: schema)
    }
    func insert(_ records: [StoredRecord]) throws(RecordsError) { try base.insert(records) }
    func insert(_ records: [StoredRecord], ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool) throws(RecordsError) -> Bool {
        try base.insert(records, ifAccepted: accept)
    }
    func replace(_ records: [StoredRecord]) throws(RecordsError) { try base.replace(records) }
    func replace(_ records: [StoredRecord], ifUnchangedFrom expected: [StoredRecord]) throws(RecordsError) -> Set<UUID> {
        try counted { () throws(RecordsError) in try base.replace(records, ifUnchangedFrom: expected) }
    }
    func replace(
        _ records: [StoredRecord], ifUnchangedFrom expected: [StoredRecord], ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool
    ) throws(RecordsError) -> Set<UUID>? {
        try counted { () throws(RecordsError) in try base.replace(records, ifUnchangedFrom: expected, ifAccepted: accept) }
    }
    /// A replace, counted: past `limit`, an injected failure; else `beforeReplace` and
    /// `afterReplace` around it.
    private func counted<R>(_ replace: () throws(RecordsError) -> R) throws(RecordsError) -> R {
        let count = lock.withLock { replaces += 1; return replaces }
        if count > limit { throw .storage(StorageFailure(.sqlite(code: 10), "injected failure")) }
        beforeReplace(count)
        let result = try replace()
        afterReplace(count)
        return result
    }

    /// Run once, as the next bulk insert (`insertInOneTransaction`) is called, before its transaction.
    let beforeBulkInsert = Locked<(@Sendable () -> Void)?>(nil)
    /// Run once, as the next bulk insert's first batch is inserted, inside its transaction.
    let insideBulkInsert = Locked<(@Sendable () -> Void)?>(nil)

    func insertInOneTransaction(
        ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool,
        _ body: (_ insert: ([StoredRecord]) throws(RecordsError) -> Void) throws(RecordsError) -> Void
    ) throws(RecordsError) -> Bool {
        beforeBulkInsert.withLock { (hook: inout (@Sendable () -> Void)?) in defer { hook = nil }; return hook }?()
        return try base.insertInOneTransaction(ifAccepted: accept) { (insert) throws(RecordsError) in
            let inserted: Result<Void, RecordsError> = withoutActuallyEscaping(insert) { insert in
                Result { () throws(RecordsError) in
                    try body { (batch) throws(RecordsError) in
                        insideBulkInsert.withLock { (hook: inout (@Sendable () -> Void)?) in defer { hook = nil }; return hook }?()
                        try insert(batch)
                    }
                }
            }
            try inserted.get()
        }
    }
    /// Applied to every answer of `record` and `search` while set (a server that lies).
    let recordAnswers = Locked<(@Sendable (StoredRecord) throws(RecordsError) -> StoredRecord)?>(nil)
    let searchAnswers = Locked<(@Sendable ([StoredRecord]) throws(RecordsError) -> [StoredRecord])?>(nil)
    /// Returned by the next `collections` instead of what is stored.
    let staleCollections = Locked<[String: RecordSchema]?>(nil)

    func collections() throws(RecordsError) -> [String: RecordSchema] {
        if let stale = staleCollections.withLock({ (next: inout [String: RecordSchema]?) in defer { next = nil }; return next }) {
            return stale
        }
        return try base.collections()
    }
    func delete(_ id: UUID) throws(RecordsError) -> Bool { try base.delete(id) }
    func record(_ id: UUID) throws(RecordsError) -> StoredRecord? {
        guard let found = try base.record(id) else { return nil }
        guard let answer = recordAnswers.withLock({ $0 }) else { return found }
        return try answer(found)
    }
    func search(_ query: StorageQuery) throws(RecordsError) -> [StoredRecord] {
        let found = try base.search(query)
        guard let answer = searchAnswers.withLock({ $0 }) else { return found }
        return try answer(found)
    }
    func records(withKeyIdOtherThan keyId: UInt32, after position: Int64, limit: Int) throws(RecordsError)
        -> (records: [StoredRecord], last: Int64)
    {
        try base.records(withKeyIdOtherThan: keyId, after: position, limit: limit)
    }
    func importAll(_ body: (any RecordImportWriter) throws(RecordsError) -> Void) throws(RecordsError) { try base.importAll(body) }
    func allRecords(after position: Int64, limit: Int) throws(RecordsError) -> (records: [StoredRecord], last: Int64) {
        try base.allRecords(after: position, limit: limit)
    }
}
