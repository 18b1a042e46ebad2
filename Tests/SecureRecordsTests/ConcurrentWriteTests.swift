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
}
