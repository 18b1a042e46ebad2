import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureCore
import Testing

/// Read-modify-writes (updates, password changes, key rotation) never overwrite a write another
/// client made between their read and their write: the storage's conditional replace, and the
/// store starting over when it refuses.
@Suite struct ConcurrentWriteTests {
    /// The conditional replace writes a record only while it is exactly as it was read; it leaves a
    /// changed or deleted one alone and names it.
    @Test(arguments: Backend.enabled)
    func aConditionalReplaceWritesOnlyRecordsUnchangedSinceRead(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let ids = try ["A", "B", "C"].map { (name) throws in try store.add(["toWhom": .string(name), "note": "1"], to: "gifts") }
        let storage = store.storage
        let read = try ids.map { (id) throws in try #require(try storage.record(id)) }
        try store.update(ids[1], setting: ["note": "changed by another client"])
        try store.delete(ids[2])
        let written = read.map { (record) -> StoredRecord in
            var copy = record
            copy.clear["note"] = "rewritten"
            return copy
        }
        #expect(try storage.replace(written, ifUnchangedFrom: read) == [ids[1], ids[2]])
        #expect(try storage.record(ids[0])?.clear["note"] == "rewritten")
        #expect(try storage.record(ids[1])?.clear["note"] == "changed by another client")
        #expect(try storage.record(ids[2]) == nil)
        // A record missing from `expected` is not written.
        #expect(try storage.replace([written[0]], ifUnchangedFrom: []) == [ids[0]])
        // A value respelled in another Unicode normalization (equal to Swift's `==`) is a change.
        var composed = written[0]
        composed.clear["note"] = .string("caf\u{E9}")
        try storage.replace([composed])
        var decomposed = composed
        decomposed.clear["note"] = .string("cafe\u{301}")
        #expect(composed == decomposed)
        try storage.replace([decomposed])
        #expect(try storage.replace([composed], ifUnchangedFrom: [composed]) == [ids[0]])
        #expect(try storage.record(ids[0])?.clear["note"]?.string.map { Array($0.utf8) } == Array("cafe\u{301}".utf8))
    }

    /// An update that meets another client's update of the same record between its read and its
    /// write starts over from the new record: both changes stand (one sets a clear field, the
    /// other a sealed one).
    @Test(arguments: Backend.enabled)
    func anUpdateKeepsAnotherClientsWriteMadeBetweenItsReadAndItsWrite(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let id = try makeStore(scratch).add(["toWhom": "A", "note": "first", "description": "d0"], to: "gifts")
        let other = try scratch.reopen()
        try other.unlock(with: appSealer)
        let interfering = FailingStorage(try scratch.storage(), failReplaceAfter: .max, beforeReplace: { count in
            guard count == 1 else { return }
            do { try other.update(id, setting: ["description": "set by the other client"]) } catch { Issue.record(error) }
        })
        let store = try RecordStore(storage: interfering, configuration: testConfiguration)
        try store.unlock(with: appSealer)
        try store.update(id, setting: ["note": "second"])
        let record = try other.open(id)
        #expect(record.fields["note"] == "second")
        #expect(record.fields["description"] == "set by the other client")
    }

    /// A rotation's batch meets an update of one of its records between its read and its write:
    /// the update stands, and the record still ends under the new key.
    @Test(arguments: Backend.enabled)
    func aRotationKeepsAnUpdateMadeDuringItsBatch(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let ids = try (0..<5).map { (i) throws in try store.add(["note": .string("n\(i)"), "description": .string("d\(i)")], to: "gifts") }
        let rotating = FailingStorage(try scratch.storage(), failReplaceAfter: .max, beforeReplace: { count in
            guard count == 1 else { return }
            do {
                try store.update(ids[0], setting: ["note": "updated during the rotation"])
                try store.update(ids[1], setting: ["description": "sealed again during the rotation"])
                try store.delete(ids[2])
            } catch {
                Issue.record(error)
            }
        })
        let rotation = try RecordStore(storage: rotating, configuration: testConfiguration).rotateStoreKey(with: appSealer)
        #expect(rotation.keyId == 2)
        let reopened = try scratch.reopen()
        try reopened.unlock(with: appSealer)
        #expect(try reopened.open(ids[0]).fields["note"] == "updated during the rotation")
        #expect(try reopened.open(ids[1]).fields["description"] == "sealed again during the rotation")
        #expect(throws: RecordsError.recordNotFound(ids[2])) { try reopened.open(ids[2]) }
        for id in [ids[0], ids[1], ids[3], ids[4]] { #expect(try reopened.storage.record(id)?.keyId == 2) }
    }

    /// The conditional insert hands the store's metadata, read in its own transaction, to the
    /// caller's check, and inserts only when the check accepts: a refusal or an error from the
    /// check stores nothing (on PostgreSQL, where the inserts were sent with the reads, they are
    /// rolled back).
    @Test(arguments: Backend.enabled)
    func aConditionalInsertStoresOnlyWhatItsCheckAccepts(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let storage = store.storage
        let id = try store.add(["toWhom": "A", "description": "d", "ssn": "1"], to: "gifts")
        let row = try #require(try storage.record(id))
        #expect(try storage.delete(id))
        let stored = try storage.loadMetadata()
        var seen: [StoreMetadata?] = []
        #expect(try !storage.insert([row]) { (metadata) throws(RecordsError) -> Bool in
            seen.append(metadata)
            return false
        })
        #expect(seen == [stored])
        #expect(try storage.record(id) == nil)
        #expect(throws: RecordsError.storeKeyRequired) {
            try storage.insert([row]) { (_) throws(RecordsError) -> Bool in throw .storeKeyRequired }
        }
        #expect(try storage.record(id) == nil)
        #expect(try storage.insert([row]) { (_) throws(RecordsError) -> Bool in true })
        #expect(try storage.record(id)?.isIdentical(to: row) == true)
        #expect(throws: RecordsError.duplicateRecord(id)) { try storage.insert([row]) { (_) throws(RecordsError) -> Bool in true } }
        // The check's verdict comes before the insert's own failure.
        #expect(try !storage.insert([row]) { (_) throws(RecordsError) -> Bool in false })
        #expect(try storage.record(id)?.isIdentical(to: row) == true)
    }

    /// An add is one transaction: the record is sealed under the key the handle holds, and the
    /// insert checks the store's keys as it writes (no separate read of them). After another
    /// client's rotation, the insert refuses the record, and the add seals it again under the
    /// new key. A locked handle's clear-only add in a store with a key stores nothing.
    @Test(arguments: Backend.enabled)
    func anAddChecksTheStoreKeysInItsOwnTransaction(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        _ = try makeStore(scratch)
        let counting = FailingStorage(try scratch.storage(), failReplaceAfter: .max)
        let store = try RecordStore(storage: counting, configuration: testConfiguration)
        try store.unlock(with: appSealer)
        _ = try store.collections()
        counting.metadataReads.withLock { $0 = 0 }
        var ids: [UUID] = []
        for i in 0..<3 { ids.append(try store.add(["toWhom": .string("t\(i)"), "description": "d", "ssn": "1"], to: "gifts")) }
        ids.append(try store.add(["toWhom": "p", "description": "d"], to: "gifts", sealing: .password(SecretBytes(Data("pw".utf8)))))
        #expect(counting.metadataReads.withLock { $0 } == 0)
        let other = try scratch.reopen()
        #expect(try other.rotateStoreKey(with: appSealer).keyId == 2)
        let afterRotation = try store.add(["toWhom": "after", "description": "d", "ssn": "1"], to: "gifts")
        #expect(counting.metadataReads.withLock { $0 } == 1)  // the refresh that took up key 2
        #expect(try counting.record(afterRotation)?.keyId == 2)
        #expect(try other.open(afterRotation).fields["description"] == "d")
        let locked = try RecordStore(storage: counting, configuration: testConfiguration)
        #expect(throws: RecordsError.storeKeyRequired) { try locked.add(["toWhom": "clear only"], to: "gifts") }
        #expect(try other.search(in: "gifts").count == ids.count + 1)
    }

    /// An add refused for a later key, by a handle that cannot take that key up (the store's keys
    /// changed under it: here it reads a key list without a key the handle holds), fails at once
    /// with `storeKeyUnavailable` and stores nothing, instead of sealing under the older key again.
    @Test(arguments: Backend.enabled)
    func anAddThatCannotTakeUpTheNewKeyFailsAndStoresNothing(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let first = try makeStore(scratch)
        try first.rotateStoreKey(with: appSealer)  // keys 1 and 2
        let storage = FailingStorage(try scratch.storage(), failReplaceAfter: .max)
        let store = try RecordStore(storage: storage, configuration: testConfiguration)
        try store.unlock(with: appSealer)
        let other = try scratch.reopen()
        try other.rotateStoreKey(with: appSealer)  // key 3
        var metadata = try #require(try storage.loadMetadata())
        metadata.keys.removeAll { $0.id == 1 }
        storage.staleMetadata.withLock { $0 = metadata }
        #expect(throws: RecordsError.storeKeyUnavailable("the store's current key is one this handle cannot take up: unlock it again")) {
            try store.add(["toWhom": "refused", "description": "d"], to: "gifts")
        }
        #expect(try other.search(in: "gifts").isEmpty)
    }

    /// A key rotation another client runs to its end between a write's read of the keys and the
    /// write's own transaction does not leave what it writes under the old key: the transaction
    /// checks the store's keys, refuses, and the write is sealed again under the new key. Here for a
    /// bulk add (its records are sealed after the check) and an update that re-seals.
    @Test(arguments: Backend.enabled)
    func aWriteOvertakenByAWholeRotationGoesUnderTheNewKey(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let first = try makeStore(scratch)
        let id = try first.add(["toWhom": "u", "description": "d0", "ssn": "0"], to: "gifts")
        let rotator = try scratch.reopen()
        @Sendable func rotate() {
            do { _ = try rotator.rotateStoreKey(with: appSealer) } catch { Issue.record(error) }
        }
        let storage = FailingStorage(try scratch.storage(), failReplaceAfter: .max, beforeReplace: { count in if count == 1 { rotate() } })
        let store = try RecordStore(storage: storage, configuration: testConfiguration)
        try store.unlock(with: appSealer)

        storage.beforeBulkInsert.withLock { $0 = rotate }  // to key 2
        let ids = try store.add(contentsOf: (0..<600).map { i in ["toWhom": .string("t\(i)"), "description": "d", "ssn": .string("\(i)")] }, to: "gifts")
        #expect(try ids.map { (id) throws in try storage.record(id)?.keyId } == Array(repeating: 2, count: ids.count))
        #expect(try rotator.search(in: "gifts", [.equals(field: "ssn", value: "599")]).map(\.id) == [ids[599]])

        try store.update(id, setting: ["description": "d1"])  // its write meets a rotation to key 3
        #expect(try storage.record(id)?.keyId == 3)
        #expect(try rotator.open(id).fields["description"] == "d1")
        #expect(try storage.records(withKeyIdOtherThan: 3, after: 0, limit: 1).records.isEmpty)
    }
}
