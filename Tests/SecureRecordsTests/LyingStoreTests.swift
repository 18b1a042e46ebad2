import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureRecordsPostgres
import SecureCore
import Testing

/// What a storage answers is checked against what was asked, not only against the records' MACs:
/// a server (or a view, rule or proxy in front of its tables) that answers with an authentic record
/// other than the one asked for, adds one from another collection to a search or repeats one, or
/// whose store writer moved the current key back or set a key id out of range, is refused; an
/// export that the store outran fails instead of writing a file no import takes.
@Suite struct LyingStoreTests {
    /// A store over `FailingStorage` (which forwards, and lies when told) on `scratch`'s store,
    /// with the `gifts` collection.
    private func lyingStore(_ scratch: RecordsScratch, unlock: Bool = true) throws -> (RecordStore, FailingStorage) {
        let storage = FailingStorage(try scratch.storage(), failReplaceAfter: .max)
        let store = try RecordStore(storage: storage, configuration: testConfiguration)
        if unlock { try store.unlock(with: appSealer) }
        return (store, storage)
    }

    /// Whether `error` is a storage failure of `cause` whose message contains `text`.
    private func isStorageFailure(_ error: any Error, _ cause: StorageFailure.Cause, containing text: String) -> Bool {
        guard case .storage(let failure) = error as? RecordsError else { return false }
        return failure.cause == cause && failure.message.contains(text)
    }

    /// Runs SQL as the store's writer: `sqlite` through the `sqlite3` shell on the file, or
    /// `postgres` (given the administrator's storage, for table names) on the server.
    private func asStoreWriter(_ scratch: RecordsScratch, sqlite: String, postgres: (PostgresRecordStorage) -> [String]) throws {
        switch scratch.backend {
        case .sqlite:
            let result = try TestSupport.run(try TestSupport.path(of: .sqlite3), [scratch.path("store.db"), sqlite])
            #expect(result.status == 0, "sqlite3: \(result.stderrText)")
        case .postgres:
            let admin = try #require(try scratch.storage() as? PostgresRecordStorage)
            defer { admin.close() }
            for statement in postgres(admin) { try admin.execute(statement) }
        }
    }

    /// Asked for record A, the storage answers with B's row, whose MAC is B's and checks: `open`,
    /// `record` (locked too) and `update` refuse it, and the update writes nothing to B.
    @Test(arguments: Backend.enabled)
    func anotherRecordAnsweredForTheOneAskedIsRefused(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let owner = try makeStore(scratch)
        let alice = try owner.add(["toWhom": "Alice", "description": "bike"], to: "gifts")
        let bob = try owner.add(["toWhom": "Bob", "description": "kite"], to: "gifts")
        let bobRow = try #require(try owner.storage.record(bob))
        let (store, storage) = try lyingStore(scratch)
        storage.recordAnswers.withLock { $0 = { _ in bobRow } }
        let refused = RecordsError.recordModified(alice, reason: "the store returned record \(bob) for it")
        #expect(throws: refused) { try store.open(alice) }
        #expect(throws: refused) { try store.record(alice) }
        #expect(throws: refused) { try store.update(alice, setting: ["toWhom": "Mallory"]) }
        let (locked, lockedStorage) = try lyingStore(scratch, unlock: false)
        lockedStorage.recordAnswers.withLock { $0 = { _ in bobRow } }
        #expect(throws: refused) { try locked.record(alice) }
        #expect(try owner.storage.record(bob)?.isIdentical(to: bobRow) == true)
        #expect(try owner.open(bob).fields["toWhom"] == "Bob")
        #expect(try owner.open(alice).fields["toWhom"] == "Alice")
    }

    /// A search answered with an authentic record of another collection (a listing, a search on
    /// clear fields: no blind index would catch it), or with one record twice, is refused, locked
    /// or not.
    @Test(arguments: Backend.enabled)
    func searchAnswersFromAnotherCollectionOrRepeatedAreRefused(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let owner = try makeStore(scratch)
        try owner.createCollection("other", schema: giftSchema)
        let alice = try owner.add(["toWhom": "Alice"], to: "gifts")
        let stranger = try owner.add(["toWhom": "Alice"], to: "other")
        let strangerRow = try #require(try owner.storage.record(stranger))
        for unlocked in [true, false] {
            let (store, storage) = try lyingStore(scratch, unlock: unlocked)
            #expect(try store.search(in: "gifts", [.equals(field: "toWhom", value: "Alice")]).map(\.id) == [alice])
            storage.searchAnswers.withLock { $0 = { $0 + [strangerRow] } }
            #expect(throws: RecordsError.recordModified(stranger, reason: "the store's search index disagrees with the record (it is in collection 'other')")) {
                try store.search(in: "gifts", [.equals(field: "toWhom", value: "Alice")])
            }
            #expect(throws: RecordsError.recordModified(stranger, reason: "the store's search index disagrees with the record (it is in collection 'other')")) {
                try store.search(in: "gifts")
            }
            storage.searchAnswers.withLock { $0 = { $0 + $0 } }
            #expect(throws: RecordsError.recordModified(alice, reason: "the store returned it twice for one search")) {
                try store.search(in: "gifts")
            }
        }
    }

    /// A key id set past 32 bits (`k + 2^32`, which would read as `k` if truncated and pass the
    /// MAC) in a record row or as the current key is malformed storage, not key `k`.
    @Test(arguments: Backend.enabled)
    func keyIdsBeyond32BitsAreMalformedStorage(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let alice = try store.add(["toWhom": "Alice", "description": "bike"], to: "gifts")
        try asStoreWriter(scratch, sqlite: "UPDATE records SET key_id = key_id + 4294967296") { admin in
            let records = admin.tableName("records")
            return [
                "ALTER TABLE \(records) DROP CONSTRAINT \(RecordsScratch.prefix("store.db"))records_key_id_check",
                "UPDATE \(records) SET key_id = key_id + 4294967296 WHERE id = '\(alice)'",
            ]
        }
        #expect { try store.open(alice) } throws: { isStorageFailure($0, .malformedStorage, containing: "key id 4294967297 is out of range") }
        try asStoreWriter(scratch, sqlite: "UPDATE meta SET value = 4294967297 WHERE name = 'currentKeyId'") { admin in
            let table = admin.tableName("store")
            return [
                "ALTER TABLE \(table) DROP CONSTRAINT \(RecordsScratch.prefix("store.db"))store_current_key_id_check",
                "UPDATE \(table) SET current_key_id = 4294967297",
            ]
        }
        #expect { try scratch.reopen().unlock(with: appSealer) } throws: { isStorageFailure($0, .malformedStorage, containing: "the current key: key id 4294967297 is out of range") }
    }

    /// After a rotation to key 2 (key 1 perhaps leaked), a store writer points the store back at
    /// key 1: a new handle refuses to unlock (it would write under key 1, and the next rotation
    /// would re-seal the store back under it). A rotation puts it right: a new key 3 is made
    /// current and every record re-sealed under it (not under key 1).
    @Test(arguments: Backend.enabled)
    func aCurrentKeyMovedBackIsRefused(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let alice = try store.add(["toWhom": "Alice", "description": "bike"], to: "gifts")
        #expect(try store.rotateStoreKey(with: appSealer).keyId == 2)
        try asStoreWriter(scratch, sqlite: "UPDATE meta SET value = 1 WHERE name = 'currentKeyId'") { admin in
            ["UPDATE \(admin.tableName("store")) SET current_key_id = 1"]
        }
        let movedBack = RecordsError.storeKeyUnavailable(
            "the store names store key 1 as current but holds the later key 2: its current key was moved back "
                + "(rotate the store key to put it right: a new key is made current and every record re-sealed under it)")
        #expect(throws: movedBack) { try scratch.reopen().unlock(with: appSealer) }
        #expect(try store.storage.record(alice)?.keyId == 2)
        // A wrong sealer adds no key.
        let wrong = try KeyItemSealer(key: SecretBytes(Data(repeating: 7, count: 32)))
        #expect(throws: RecordsError.self) { try scratch.reopen().rotateStoreKey(with: wrong) }
        #expect(try store.storage.loadMetadata()?.keys.count == 2)
        let rotation = try scratch.reopen().rotateStoreKey(with: appSealer)
        #expect(rotation.keyId == 3 && rotation.resealed == 1 && !rotation.resumed)
        #expect(try store.storage.loadMetadata()?.currentKeyId == 3)
        #expect(try store.storage.record(alice)?.keyId == 3)
        let reopened = try scratch.reopen()
        try reopened.unlock(with: appSealer)
        #expect(try reopened.open(alice).fields["description"] == "bike")
    }

    /// An export made after a rotation, imported into a copy of the store from before it, moves the
    /// copy's current key forward (so the copy unlocks, and writes under the later key); an export
    /// whose store line names an older key as current is refused.
    @Test(arguments: Backend.enabled)
    func anImportMovesTheCurrentKeyForwardOnly(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let source = try makeStore(scratch, name: "source.db")
        var before: [String] = []
        try source.export { before.append($0) }
        let copy = try RecordStore(storage: try scratch.storage("copy.db"), importing: before, configuration: testConfiguration)
        #expect(try copy.storage.loadMetadata()?.currentKeyId == 1)
        try source.rotateStoreKey(with: appSealer)
        let later = try source.add(["toWhom": "Bob", "description": "kite"], to: "gifts")
        var after: [String] = []
        try source.export { after.append($0) }
        #expect(try copy.importLines(after) == 1)
        #expect(try copy.storage.loadMetadata()?.currentKeyId == 2)
        try copy.unlock(with: appSealer)
        #expect(try copy.open(later).fields["description"] == "kite")
        #expect(try copy.storage.record(try copy.add(["toWhom": "Carol"], to: "gifts"))?.keyId == 2)

        var storeLine = try #require(try JSONSerialization.jsonObject(with: Data(after[0].utf8)) as? [String: Any])
        storeLine["currentKeyId"] = 1
        let olderCurrent = String(decoding: try JSONSerialization.data(withJSONObject: storeLine, options: [.sortedKeys]), as: UTF8.self)
        #expect(throws: RecordsError.invalidImport(line: 1, reason: "the current key 1 is older than key 2 (rotate the store key, then export again)")) {
            try RecordStore(storage: try scratch.storage("crafted.db"), importing: [olderCurrent], configuration: testConfiguration)
        }
    }

    /// An export line of a password record with a write id but no sealed value (which every read
    /// would refuse) is refused by the import.
    @Test func anImportedPasswordRecordWithAWriteIdAndNoSealedValueIsRefused() throws {
        let scratch = try RecordsScratch()
        let source = try makeStore(scratch, name: "source.db")
        try source.add(["toWhom": "Alice", "description": "bike"], to: "gifts", sealing: .password(secret("pw")))
        var lines: [String] = []
        try source.export { lines.append($0) }
        try #require(lines.count == 3)
        var record = try #require(try JSONSerialization.jsonObject(with: Data(lines[2].utf8)) as? [String: Any])
        record["sealed"] = [String: Any]()
        lines[2] = String(decoding: try JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]), as: UTF8.self)
        #expect(throws: RecordsError.invalidImport(line: 3, reason: "a password record with a write id has no sealed value")) {
            try RecordStore(storage: try scratch.storage("copy.db"), importing: lines, configuration: testConfiguration)
        }
    }

    /// An export that a rotation (a record under a key the store line lacks) or a new collection
    /// (a record in a collection no line declares) overtakes fails, naming the record, rather than
    /// write a file that no import takes; the export that follows imports.
    @Test(arguments: Backend.enabled)
    func anExportOvertakenByTheStoreFails(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let (store, storage) = try lyingStore(scratch, unlock: false)
        try store.createCollection("gifts", schema: giftSchema)
        try store.unlock(with: appSealer)
        let before = try #require(try storage.loadMetadata())
        let alice = try store.add(["toWhom": "Alice", "description": "bike"], to: "gifts")
        try store.rotateStoreKey(with: appSealer)
        storage.staleMetadata.withLock { $0 = before }
        #expect { try store.export { _ in } } throws: { isStorageFailure($0, .export, containing: "record \(alice) is under store key 2") }
        storage.staleCollections.withLock { $0 = [:] }
        #expect { try store.export { _ in } } throws: { isStorageFailure($0, .export, containing: "record \(alice) is in collection 'gifts'") }
        var lines: [String] = []
        #expect(try store.export { lines.append($0) } == 1)
        let copy = try RecordStore(storage: try scratch.storage("copy.db"), importing: lines, configuration: testConfiguration)
        try copy.unlock(with: appSealer)
        #expect(try copy.open(alice).fields["description"] == "bike")
    }
}
