import Foundation
import SFTestSupport
@testable import SecureRecords
@testable import SecureRecordsPostgres
import SecureCore
import Testing

/// How large a record may be, and batches of large records. A record above
/// `RecordStore.Configuration.maximumRecordBytes` is refused with `recordTooLarge` by `add`,
/// `add(contentsOf:)` and `update`, on both backends, and nothing is written; one at the limit is
/// stored. On PostgreSQL a batch is
/// sent in groups of about `PostgresRecordStorage.groupBytes`, whatever its records' sizes. (Before
/// both, a value of 2 GiB, or a batch whose values took 2 GiB together, trapped on a 32-bit
/// length, and one past 1 GiB failed differently on each backend.)
@Suite struct RecordSizeTests {
    static let limit = 1_000

    @Test(arguments: Backend.enabled)
    func everyWriteRefusesARecordAboveTheLimit(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        var configuration = testConfiguration
        configuration.maximumRecordBytes = Self.limit
        let store = try RecordStore(storage: try scratch.storage(), configuration: configuration)
        try store.createCollection("gifts", schema: giftSchema)
        try store.unlock(with: appSealer)

        // The limit counts bytes, not characters ("é" is 2 bytes of UTF-8), as stored: clear values
        // as they are, a sealed value as its envelope (a few dozen bytes more), the names, and a
        // store-keyed record's 32-byte MAC. This record takes exactly the limit.
        let overhead = "toWhom".utf8.count + 32
        let atLimit = String(repeating: "é", count: (Self.limit - overhead) / 2)
        let clearAtLimit: [String: FieldValue] = ["toWhom": .string(atLimit)]
        let split: [String: FieldValue] = ["toWhom": .string(String(repeating: "a", count: 400)), "note": .bytes(Data(count: 300)),
                                           "description": .string(String(repeating: "d", count: 200))]
        let clearOnly = try store.add(clearAtLimit, to: "gifts")
        let storeKeyed = try store.add(split, to: "gifts")
        let password = try store.add(split, to: "gifts", sealing: .password(secret("pw")))
        #expect(try store.open(clearOnly).fields == clearAtLimit)

        func refused(_ what: String, _ write: () throws -> Void) {
            #expect(throws: RecordsError.recordTooLarge(limit: Self.limit), "\(what)") { try write() }
        }
        let tooLarge: [(what: String, fields: [String: FieldValue])] = [
            ("one clear value a byte too long", ["toWhom": .string(atLimit + "a")]),
            ("values each below the limit, together above it", ["toWhom": .string(String(repeating: "a", count: 600)), "photo": .bytes(Data(count: 401))]),
            // 980 bytes of names and values, refused only once sealed (envelope, MAC).
            ("a sealed value whose envelope is above it", ["toWhom": "Bo", "blob": .bytes(Data(count: 968))]),
            ("an indexed one", ["ssn": .bytes(Data(count: Self.limit + 1))]),
        ]
        let before = try store.search().map(\.id).sorted()
        for (what, fields) in tooLarge {
            refused("add, \(what)") { _ = try store.add(fields, to: "gifts") }
            if fields["ssn"] == nil {
                refused("add with a password, \(what)") { _ = try store.add(fields, to: "gifts", sealing: .password(secret("pw"))) }
            }
            // The last of more than one sealing chunk (256 records each): nothing of the load is stored.
            let load = Array(repeating: ["toWhom": FieldValue.string("Cy")], count: 600) + [fields]
            refused("add(contentsOf:), \(what)") { _ = try store.add(contentsOf: load, to: "gifts") }
            refused("update, \(what)") { try store.update(storeKeyed, setting: fields) }
        }
        // An update that sets little but would leave the record too large.
        refused("update adding to a record") { try store.update(clearOnly, setting: ["note": "x"]) }
        refused("update of a store-keyed record's sealed value") { try store.update(storeKeyed, setting: ["blob": .bytes(Data(count: 150))]) }
        refused("update of a password record") {
            try store.update(password, setting: ["note": .bytes(Data(count: 400))], password: secret("pw"))
        }
        // What the records hold already is not checked again where nothing grows: a rotation and a
        // password change go through even with a lower limit.
        var lower = configuration
        lower.maximumRecordBytes = 10
        let strict = try scratch.reopen(configuration: lower)
        try strict.unlock(with: appSealer)
        _ = try strict.rotateStoreKey(with: appSealer)
        try strict.changePassword(of: password, from: secret("pw"), to: secret("new"))

        let reopened = try scratch.reopen(configuration: configuration)
        try reopened.unlock(with: appSealer)
        #expect(try reopened.search().map(\.id).sorted() == before)
        #expect(try reopened.open(clearOnly).fields == clearAtLimit)
        #expect(try reopened.open(storeKeyed).fields == split)
        #expect(try reopened.open(password, password: secret("new")).fields == split)
    }

    /// The default limit is 128 MiB, and no setting goes past it (a record's export must fit an
    /// import's 1 GiB line). The values here are never copied or touched.
    @Test(arguments: Backend.enabled)
    func theDefaultLimitAndTheCeiling(backend: Backend) throws {
        #expect(RecordStore.Configuration().maximumRecordBytes == 128 << 20)
        let scratch = try RecordsScratch(backend)
        let store = try RecordStore(storage: try scratch.storage())
        try store.createCollection("gifts", schema: giftSchema)
        try store.unlock(with: appSealer)
        #expect(throws: RecordsError.recordTooLarge(limit: 128 << 20)) {
            try store.add(["blob": .bytes(Data(count: 100 << 20)), "photo": .bytes(Data(count: (28 << 20) + 1))], to: "gifts")
        }
        let unbounded = try scratch.reopen(configuration: RecordStore.Configuration(maximumRecordBytes: .max))
        try unbounded.unlock(with: appSealer)
        #expect(throws: RecordsError.recordTooLarge(limit: 128 << 20)) {
            try unbounded.add(contentsOf: [["toWhom": "Bo"], ["photo": .bytes(Data(count: (128 << 20) + 1))]], to: "gifts")
        }
        #expect(try store.search().isEmpty)
    }

    /// A file's lines are found whole wherever the 1 MiB reads cut them (each read's bytes are
    /// searched for a newline once, from where the search before stopped): a CRLF split between
    /// two reads, a line spanning several, an empty line, and a last line without LF.
    @Test func fileLinesAreWholeAcrossReads() throws {
        let scratch = try RecordsScratch()
        let path = scratch.path("lines.jsonl")
        let expected = [
            String(repeating: "a", count: (1 << 20) - 1),  // its CR ends the first read, its LF begins the second
            String(repeating: "b", count: 3 << 20 + 17),
            "",
            "c",
            String(repeating: "d", count: 5),
        ]
        let text = expected[0] + "\r\n" + expected[1] + "\n" + expected[2] + "\n" + expected[3] + "\r\n" + expected[4]
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        var lines: [(Int, String)] = []
        try FileLines(path: path).forEachLine { number, line, _ in
            lines.append((number, String(decoding: line, as: UTF8.self)))
            return true
        }
        #expect(lines.map(\.0) == Array(1...expected.count))
        #expect(lines.map(\.1) == expected)
    }

    /// An export line longer than 1 GiB is refused from memory as from a file, before it is parsed.
    @Test func anImportLineAbove1GiBIsRefusedFromMemory() throws {
        let scratch = try RecordsScratch()
        let line = String(repeating: "a", count: (1 << 30) + 1)
        #expect(throws: RecordsError.invalidImport(line: 1, reason: "longer than \(1 << 30) bytes")) {
            _ = try RecordStore(storage: try scratch.storage(), importing: [line], configuration: testConfiguration)
        }
    }

    /// On PostgreSQL, a batch of large records is sent as several groups of statements (each bound
    /// value and message stays far below the server's 1 GiB and a 32-bit length), by an insert and
    /// by a rotation's rewrite; every record reads back.
    @Test(.requires(.postgres))
    func largeBatchesAreSentInGroups() throws {
        let scratch = try RecordsScratch(.postgres)
        let store = try makeStore(scratch)
        let storage = try #require(store.storage as? PostgresRecordStorage)
        let blob = Data((0..<(20 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let records: [[String: FieldValue]] = (0..<3).map { ["toWhom": .string("r\($0)"), "blob": .bytes(blob + Data([UInt8($0)]))] }

        // 20 MiB each: a group of 32 MiB takes one, so three groups of three statements each
        // (records, clear fields, sealed fields).
        let sealed = try records.map { try store.seal(id: UUID(), collection: "gifts", schema: giftSchema, fields: $0, sealing: .storeKey) }
        #expect(PostgresRecordStorage.groups(sealed).map(\.count) == [1, 1, 1])
        #expect(try storage.insertStatements(sealed).count == 9)

        // Every group's UPDATE reports the records it found: a record missing from the last group
        // fails the replace, one found in any group does not.
        try storage.insert(sealed)
        try storage.replace(sealed)
        let absent = StoredRecord(
            id: UUID(), collection: "gifts", keying: .storeKey, keyId: sealed[0].keyId, clear: sealed[0].clear, sealed: sealed[0].sealed,
            blindIndexes: [:], mac: sealed[0].mac)
        #expect(throws: RecordsError.recordNotFound(absent.id)) { try storage.replace(sealed + [absent]) }

        let ids = try store.add(contentsOf: records, to: "gifts")  // one insert of three groups
        _ = try store.rotateStoreKey(with: appSealer)  // batches of 3 (rotationBatchSize), of three groups
        let reopened = try scratch.reopen()
        try reopened.unlock(with: appSealer)
        for (id, fields) in zip(ids, records) { #expect(try reopened.open(id).fields == fields) }
    }
}
