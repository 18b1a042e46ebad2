import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureCore
import SecureKeychain
import SecureVault
import Testing

@Suite struct RoundTripTests {
    let fields: [String: FieldValue] = [
        "toWhom": "Alice", "photo": .bytes(Data([0, 1, 2, 255])), "description": "a red bicycle 🚲",
        "blob": .bytes(Data([9, 8, 7])), "ssn": "123-45-6789",
    ]

    @Test(arguments: Backend.enabled)
    func storeKeyRoundTripEveryFieldKind(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let id = try store.add(fields, to: "gifts")
        let closed = try store.record(id)
        #expect(closed.clearFields == ["toWhom": "Alice", "photo": .bytes(Data([0, 1, 2, 255]))])
        #expect(closed.sealedFieldNames == ["blob", "description", "ssn"])
        #expect(closed.openedFields.isEmpty)
        #expect(try store.open(id).fields == fields)
        // Reopened from the file, with the key unwrapped again.
        let reopened = try scratch.reopen()
        #expect(throws: RecordsError.storeKeyRequired) { try reopened.open(id) }
        try reopened.unlock(with: appSealer)
        #expect(try reopened.open(id).fields == fields)
        #expect(try reopened.open(id).keying == .storeKey)
    }

    @Test(arguments: Backend.enabled)
    func passwordRoundTripEveryFieldKind(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch, unlock: false)
        var passwordFields = fields
        passwordFields["ssn"] = nil  // indexed fields need the store key
        let id = try store.add(passwordFields, to: "gifts", sealing: .password(secret("alice pw")))
        #expect(try store.open(id, password: secret("alice pw")).fields == passwordFields)
        #expect(try store.record(id).keying == .password)
        // Each value has its own salt and nonce: sealing the same value twice differs.
        let stored = try #require(try store.storage.record(id))
        let other = try store.add(passwordFields, to: "gifts", sealing: .password(secret("alice pw")))
        let storedOther = try #require(try store.storage.record(other))
        #expect(stored.sealed["description"] != storedOther.sealed["description"])
        let header = try Envelope.header(of: try #require(stored.sealed["description"]))
        #expect(header.kdf == testKDF)
    }

    @Test(arguments: Backend.enabled)
    func passwordIndexedFieldIsRefused(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        #expect(throws: RecordsError.self) { try store.add(["ssn": "1"], to: "gifts", sealing: .password(secret("pw"))) }
        #expect(try store.search().isEmpty)
    }

    @Test(arguments: Backend.enabled)
    func vaultKeyedRoundTrip(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let keychain = try Keychain(path: scratch.path("keychain.db"))
        let vault = Vault(keychain: keychain, configuration: .init(kdf: testKDF))
        try vault.setUp(passcode: secret("1234"), questions: ["q?"], answers: ["a"])
        let store = try makeStore(scratch, unlock: false)
        try store.unlock(with: vault)
        let id = try store.add(fields, to: "gifts")
        vault.purge()
        let again = try scratch.reopen()
        #expect(throws: RecordsError.self) { try again.unlock(with: vault) }  // vault locked
        try vault.unlock(passcode: secret("1234"))
        try again.unlock(with: vault)
        #expect(try again.open(id).fields == fields)
        try keychain.close()
    }

    @Test(arguments: Backend.enabled)
    func passphraseSealerRoundTrip(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch, unlock: false)
        try store.unlock(with: try PassphraseItemSealer(passphrase: secret("app passphrase"), kdf: testKDF))
        let id = try store.add(fields, to: "gifts")
        let again = try scratch.reopen()
        try again.unlock(with: try PassphraseItemSealer(passphrase: secret("app passphrase"), kdf: testKDF))
        #expect(try again.open(id).fields == fields)
    }

    @Test(arguments: Backend.enabled)
    func updateAndDelete(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let id = try store.add(fields, to: "gifts")
        try store.update(id, setting: ["toWhom": "Bob", "description": "a kite"], removing: ["blob"])
        let opened = try store.open(id)
        #expect(opened.fields["toWhom"] == "Bob")
        #expect(opened.fields["description"] == "a kite")
        #expect(opened.fields["blob"] == nil)
        #expect(opened.fields["ssn"] == "123-45-6789")
        #expect(throws: RecordsError.unknownField(collection: "gifts", field: "nope")) { try store.update(id, setting: ["nope": "x"]) }
        try store.delete(id)
        #expect(throws: RecordsError.recordNotFound(id)) { try store.record(id) }
        #expect(throws: RecordsError.recordNotFound(id)) { try store.delete(id) }
    }

    @Test(arguments: Backend.enabled)
    func passwordUpdateNeedsTheRecordsPassword(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch, unlock: false)
        let id = try store.add(["toWhom": "Alice", "description": "bike"], to: "gifts", sealing: .password(secret("pw")))
        #expect(throws: RecordsError.passwordRequired(id)) { try store.update(id, setting: ["description": "kite"]) }
        #expect(throws: RecordsError.authenticationFailed(record: id, field: "description")) {
            try store.update(id, setting: ["description": "kite"], password: secret("other"))
        }
        // The sealed values bind the clear fields, so changing one needs the password too.
        #expect(throws: RecordsError.passwordRequired(id)) { try store.update(id, setting: ["toWhom": "Carol"]) }
        try store.update(id, setting: ["toWhom": "Carol"], password: secret("pw"))
        try store.update(id, setting: ["blob": .bytes(Data([1]))], password: secret("pw"))
        #expect(try store.open(id, password: secret("pw")).fields == ["toWhom": "Carol", "description": "bike", "blob": .bytes(Data([1]))])
    }

    /// Duplicate ids and missing ids give the same typed errors on both backends, and a failed
    /// batch writes nothing.
    @Test(arguments: Backend.enabled)
    func duplicateAndMissingIdsChangeNothing(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let id = try store.add(["toWhom": "Alice", "description": "bike"], to: "gifts")
        #expect(throws: RecordsError.duplicateRecord(id)) { try store.add(["toWhom": "Bob"], to: "gifts", id: id) }
        let fresh = StoredRecord(id: UUID(), collection: "gifts", keying: .storeKey, keyId: nil, clear: ["toWhom": "Carol"], sealed: [:], blindIndexes: [:])
        var again = fresh
        again.clear = ["toWhom": "Dave"]
        #expect(throws: RecordsError.duplicateRecord(fresh.id)) { try store.storage.insert([fresh, again]) }  // within one batch
        let existing = StoredRecord(id: id, collection: "gifts", keying: .storeKey, keyId: nil, clear: ["toWhom": "Eve"], sealed: [:], blindIndexes: [:])
        #expect(throws: RecordsError.duplicateRecord(id)) { try store.storage.insert([fresh, existing]) }
        #expect(try store.storage.record(fresh.id) == nil)
        // Importing the store's own export again: duplicate ids, nothing imported.
        var lines: [String] = []
        try store.export { lines.append($0) }
        #expect(throws: RecordsError.duplicateRecord(id)) { try store.importLines(lines) }
        // Replacing a batch with a missing record: nothing replaced.
        var changed = try #require(try store.storage.record(id))
        changed.clear["toWhom"] = "Mallory"
        #expect(throws: RecordsError.recordNotFound(fresh.id)) { try store.storage.replace([changed, fresh]) }
        #expect(try store.search(in: "gifts").map(\.id) == [id])
        #expect(try store.open(id).fields == ["toWhom": "Alice", "description": "bike"])
    }

    @Test(arguments: Backend.enabled)
    func schemaIsDeclaredOnce(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        try store.createCollection("gifts", schema: giftSchema)  // same schema: nothing happens
        #expect(throws: RecordsError.schemaMismatch(collection: "gifts")) {
            try store.createCollection("gifts", schema: try RecordSchema(["toWhom": .sealed]))
        }
        #expect(throws: RecordsError.collectionNotFound("nope")) { try store.add(["a": "b"], to: "nope") }
        #expect(throws: RecordsError.unknownField(collection: "gifts", field: "x")) { try store.add(["x": "y"], to: "gifts") }
        #expect(throws: RecordsError.self) { try RecordSchema([:]) }
        #expect(throws: RecordsError.self) { try RecordSchema(["": .clear]) }
        #expect(throws: RecordsError.self) { try RecordSchema(["a\u{0}": .clear]) }
        // The schema is stored with the collection.
        let reopened = try scratch.reopen(configuration: .init())
        #expect(try reopened.schema(of: "gifts") == giftSchema)
    }

    @Test func storeFileIsPrivateWALAndRefusesOtherDatabases() throws {
        let scratch = try RecordsScratch()
        let store = try makeStore(scratch)
        let attributes = try FileManager.default.attributesOfItem(atPath: scratch.path("store.db"))
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(FileManager.default.fileExists(atPath: scratch.path("store.db-wal")))  // open: WAL in use
        if let sqlite = TestSupport.which("sqlite3") {
            #expect(try TestSupport.run(sqlite, [scratch.path("store.db"), "PRAGMA journal_mode"]).stdoutText == "wal\n")
        }
        withExtendedLifetime(store) {}
        // A keychain file is a SQLite database but not a record store.
        let keychain = try Keychain(path: scratch.path("keychain.db"))
        try keychain.setPassword(Data("x".utf8), service: "s", account: "a")
        try keychain.close()
        #expect(throws: RecordsError.self) { try RecordStore(path: scratch.path("keychain.db")) }
    }
}

/// `FieldValue`'s text form, which `sf records` prints and reads.
@Suite struct FieldValueTextTests {
    @Test func descriptionParsesBackToTheSameValue() {
        let values: [FieldValue] = [
            "Alice", "", "Noël 🎁", "=a=b", .bytes(Data()), .bytes(Data([0, 1, 0xFE, 0xFF])), .bytes(Data("base64:x".utf8)),
        ]
        for value in values { #expect(FieldValue(value.description) == value, "\(value)") }
    }

    @Test func malformedBase64IsRefusedNotTakenAsText() {
        for text in ["base64:%%%", "base64:AAA", "base64:A B C"] { #expect(FieldValue(text) == nil, "\(text)") }
        // Through a variable: `FieldValue("…")` of a literal would be the string literal itself.
        let parse: (String) -> FieldValue? = { FieldValue($0) }
        #expect(parse("base64:") == .bytes(Data()))
        #expect(parse("Base64:AA==") == .string("Base64:AA=="))  // the prefix is exact
    }
}
