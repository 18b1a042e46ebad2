import Foundation
@testable import SecureRecords
import SecureCore
import Testing

let macMismatch = "its MAC does not match: a clear field, blind-index token, sealed value or key id was changed"

@Suite struct TamperTests {
    @Test(arguments: Backend.enabled)
    func wrongPasswordGivesTypedErrorAndNoPlaintext(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch, unlock: false)
        let alice = try store.add(["toWhom": "Alice", "description": "bike"], to: "gifts", sealing: .password(secret("alice")))
        let bob = try store.add(["toWhom": "Bob", "description": "kite"], to: "gifts", sealing: .password(secret("bob")))
        #expect(throws: RecordsError.authenticationFailed(record: alice, field: "description")) {
            try store.open(alice, password: secret("bob"))
        }
        #expect(throws: RecordsError.passwordRequired(bob)) { try store.open(bob) }
        #expect(try store.open(bob, password: secret("bob")).fields["description"] == "kite")
    }

    @Test(arguments: Backend.enabled)
    func wrongApplicationKeyCannotUnlock(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let id = try store.add(["description": "bike"], to: "gifts")
        let other = try scratch.reopen()
        let wrong = try KeyItemSealer(key: SecretBytes(Data(repeating: 7, count: 32)))
        #expect(throws: RecordsError.self) { try other.unlock(with: wrong) }
        #expect(!other.isUnlocked)
        #expect(throws: RecordsError.storeKeyRequired) { try other.open(id) }
        #expect(throws: RecordsError.storeKeyRequired) { try other.search(in: "gifts", [.equals(field: "ssn", value: "1")]) }
    }

    @Test(arguments: Backend.enabled)
    func storeKeyValueWithWrongStoreKeyFails(backend: Backend) throws {
        // Two stores, each with its own random store key: a value copied across fails even with the same app key.
        let scratch = try RecordsScratch(backend)
        let a = try makeStore(scratch, name: "a.db")
        let b = try makeStore(scratch, name: "b.db")
        let idA = try a.add(["description": "bike"], to: "gifts")
        let idB = try b.add(["description": "kite"], to: "gifts")
        var stolen = try #require(try b.storage.record(idB))
        stolen.sealed["description"] = try #require(try a.storage.record(idA)).sealed["description"]
        try b.storage.replace([stolen])
        #expect(throws: RecordsError.recordModified(idB, reason: macMismatch)) { try b.open(idB) }
        // Behind the MAC, the sealed value's own context refuses it too.
        try b.storage.replace([try authenticated(stolen, by: b)])
        #expect(throws: RecordsError.authenticationFailed(record: idB, field: "description")) { try b.open(idB) }
    }

    /// A sealed value moved to another record, another field, another collection or another store
    /// fails: the record's MAC (store-keyed records) refuses the record, and behind it (rows MACed
    /// again here, as no store writer can) the sealed value's context refuses the value.
    @Test(arguments: Backend.enabled, [RecordKeying.storeKey, .password])
    func movedSealedValuesFail(backend: Backend, keying: RecordKeying) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        try store.createCollection("other", schema: giftSchema)
        let sealing: RecordSealing = keying == .storeKey ? .storeKey : .password(secret("pw"))
        let password: SecretBytes? = keying == .storeKey ? nil : secret("pw")
        let source = try store.add(["description": "bike", "blob": .bytes(Data([1]))], to: "gifts", sealing: sealing)
        let target = try store.add(["description": "kite", "blob": .bytes(Data([2]))], to: "gifts", sealing: sealing)
        let elsewhere = try store.add(["description": "ball"], to: "other", sealing: sealing)
        let sourceRow = try #require(try store.storage.record(source))
        let moved = try #require(sourceRow.sealed["description"])

        // Another record.
        var row = try #require(try store.storage.record(target))
        row.sealed["description"] = moved
        try store.storage.replace([row])
        if keying == .storeKey {
            #expect(throws: RecordsError.recordModified(target, reason: macMismatch)) { try store.open(target, password: password) }
            try store.storage.replace([try authenticated(row, by: store)])
        }
        #expect(throws: RecordsError.authenticationFailed(record: target, field: "description")) { try store.open(target, password: password) }
        // Another field of the same record.
        var same = sourceRow
        same.sealed["blob"] = moved
        try store.storage.replace([try authenticated(same, by: store)])
        #expect(throws: RecordsError.authenticationFailed(record: source, field: "blob")) { try store.open(source, password: password) }
        // Another collection.
        var other = try #require(try store.storage.record(elsewhere))
        other.sealed["description"] = moved
        try store.storage.replace([try authenticated(other, by: store)])
        #expect(throws: RecordsError.authenticationFailed(record: elsewhere, field: "description")) {
            try store.open(elsewhere, password: password)
        }
        // Another store (same record id, collection and field; same password or app key).
        let second = try makeStore(scratch, name: "second.db")
        var copy = sourceRow
        copy.sealed = ["description": moved]
        copy.keyId = keying == .storeKey ? 1 : nil
        try second.storage.insert([try authenticated(copy, by: second)])
        #expect(throws: RecordsError.authenticationFailed(record: source, field: "description")) { try second.open(source, password: password) }
    }

    /// Every byte flip and every truncation of a stored sealed value gives a typed error, never a
    /// value: behind the record's MAC (rows MACed again here), the envelope refuses it.
    @Test(arguments: Backend.enabled, [RecordKeying.storeKey, .password])
    func everyByteFlipAndTruncationFails(backend: Backend, keying: RecordKeying) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let password: SecretBytes? = keying == .storeKey ? nil : secret("pw")
        let id = try store.add(["description": "a red bicycle"], to: "gifts", sealing: password.map { .password($0) } ?? .storeKey)
        let original = try #require(try store.storage.record(id))
        let sealed = try #require(original.sealed["description"])
        func check(_ bytes: Data) throws {
            var row = original
            row.sealed["description"] = bytes
            try store.storage.replace([try authenticated(row, by: store)])
            do {
                let opened = try store.open(id, password: password)
                Issue.record("tampered value opened: \(opened.openedFields.count) fields")
            } catch {
                switch error {
                case .authenticationFailed(id, "description"), .malformedSealedValue(id, "description", _), .costAboveCeiling: break
                default: Issue.record("unexpected error \(error)")
                }
            }
        }
        for index in sealed.indices {
            for bit in [0x01, 0x80] as [UInt8] {
                var flipped = sealed
                flipped[index] ^= bit
                try check(flipped)
            }
        }
        for length in 0..<sealed.count { try check(sealed.prefix(length)) }
        try check(sealed + Data([0]))
        // The untouched value still opens.
        try store.storage.replace([original])
        #expect(try store.open(id, password: password).fields["description"] == "a red bicycle")
    }

    @Test(arguments: Backend.enabled)
    func tamperedWrappedStoreKeyFailsToUnlock(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        _ = try store.add(["description": "x"], to: "gifts")
        let metadata = try #require(try store.storage.loadMetadata())
        let wrapped = try #require(metadata.keys.first).wrapped
        // The wrap is bound to its store id and key id: a wrap under another id does not open.
        #expect(throws: (any Error).self) {
            try appSealer.open(wrapped, context: RecordContext.keyWrap(storeId: metadata.storeId, keyId: 2))
        }
        #expect(throws: (any Error).self) {
            try appSealer.open(wrapped, context: RecordContext.keyWrap(storeId: Data(repeating: 0, count: 16), keyId: 1))
        }
    }

    /// Error descriptions quote names and reasons from a store, an import or a server that anyone
    /// may have written (a schema's field name, an import's type, a server's message): `sf` prints
    /// them, so their control characters are escaped.
    @Test func errorDescriptionsEscapeControlCharacters() {
        let hostile = "\u{1B}]0;pwned\u{07}\u{1B}[2K"
        let errors: [RecordsError] = [
            .unknownField(collection: hostile, field: hostile),
            .invalidSchema("field \(hostile)"),
            .recordModified(UUID(), reason: hostile),
            .invalidImport(line: 1, reason: hostile),
            .storage(StorageFailure(.server(sqlState: "XX000"), "the server said: \(hostile)")),
        ]
        for error in errors {
            #expect(!error.description.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, "\(error.description)")
            #expect(error.description.contains("\\u{1B}]0;pwned\\u{7}"), "\(error.description)")
        }
        #expect(!StorageFailure(.server(sqlState: "XX000"), hostile).description.contains("\u{1B}"))
    }

    @Test func contextEncodingIsUnambiguous() {
        let id = UUID()
        let a = RecordContext.sealedValue(storeId: Data([1]), collection: "ab", record: id, field: "c")
        let b = RecordContext.sealedValue(storeId: Data([1]), collection: "a", record: id, field: "bc")
        #expect(a != b)
        #expect(Data(a.prefix(8)) == Data("SFR1".utf8) + Data([0, 0, 0, 1]))
    }
}
