import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureCore
import Testing

/// The SQLite schema: version 1 stores (Tests/Vectors/records/v1-store.db, written by the version 1
/// code) migrate to version 2 in one transaction; newer versions are refused; the v2 field maps
/// accept exactly one encoding. The `sqlite3` shell reads and edits the files underneath.
@Suite struct MigrationTests {
    /// The records of the version 1 fixture (see Tests/Vectors/README.md), in insertion order.
    static let alice = UUID(uuidString: "091C807C-CD92-4080-BBB8-275336756869")!
    static let bob = UUID(uuidString: "9FE57930-C5C3-411F-BC23-46ACEA3ED141")!
    static let carol = UUID(uuidString: "8CEF49DA-3C69-4DD9-95E4-2C0854A3E7BA")!
    static let dave = UUID(uuidString: "A9608C77-2853-43C3-ACA8-B0EAD34A5ECB")!
    static let note = UUID(uuidString: "ADC9E9A3-90BF-4C38-B0CF-752264C474E1")!

    /// A copy of the version 1 fixture in a fresh scratch directory: (scratch, path, sqlite3 shell).
    func version1Copy() throws -> (RecordsScratch, String, String) {
        let shell = try TestSupport.path(of: .sqlite3)
        let scratch = try RecordsScratch()
        let data = try #require(try TestSupport.vector("records/v1-store.db"))
        let path = try scratch.write("v1.db", data)
        #expect(try sql(shell, path, "SELECT version FROM schema_version") == "1")
        return (scratch, path, shell)
    }

    @discardableResult
    func sql(_ shell: String, _ path: String, _ statement: String) throws -> String {
        let result = try TestSupport.run(shell, [path, statement])
        #expect(result.status == 0, "sqlite3 failed: \(result.stderrText)")
        return result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Every record of the fixture opens with its key or password, and every kind of search finds
    /// what it found before.
    func expectFixtureContent(_ store: RecordStore) throws {
        let all = try store.search()
        #expect(all.map(\.id) == [Self.alice, Self.bob, Self.carol, Self.dave, Self.note])
        let alice = try store.open(Self.alice)
        #expect(alice.fields == [
            "toWhom": "Alice", "note": "a red bicycle wrapped in paper", "photo": .bytes(Data([0, 1, 2, 250])),
            "description": "a red bicycle", "blob": .bytes(Data([9, 8, 7])), "ssn": "123-45-6789",
        ])
        #expect(try store.open(Self.bob).fields == ["toWhom": "Bob", "note": "a blue kite and a bicycle", "description": "a kite", "ssn": "987-65-4321"])
        #expect(try store.open(Self.carol, password: secret("carol pw")).fields == [
            "toWhom": "Carol", "note": "a bicycle book", "description": "a book",
        ])
        #expect(throws: RecordsError.authenticationFailed(record: Self.carol, field: "description")) {
            try store.open(Self.carol, password: secret("wrong"))
        }
        #expect(try store.open(Self.dave).fields == ["description": "nothing clear", "ssn": "123-45-6789"])
        #expect(try store.open(Self.note).fields == ["title": "Ünïcode title bicycle", "body": "sealed body"])

        func ids(_ collection: String?, _ conditions: [RecordCondition]) throws -> [UUID] {
            try store.search(in: collection, conditions).map(\.id)
        }
        #expect(try ids("gifts", [.equals(field: "toWhom", value: "Alice")]) == [Self.alice])
        #expect(try ids("gifts", [.prefix(field: "toWhom", prefix: "Ca")]) == [Self.carol])
        #expect(try ids("gifts", [.equals(field: "photo", value: .bytes(Data([0, 1, 2, 250])))]) == [Self.alice])
        #expect(try ids("gifts", [.equals(field: "ssn", value: "123-45-6789")]) == [Self.alice, Self.dave])
        #expect(try ids("gifts", [.equals(field: "ssn", value: "000-00-0000")]).isEmpty)  // the deleted record
        #expect(try ids("notes", [.equals(field: "body", value: "sealed body")]) == [Self.note])
        #expect(try ids("gifts", [.fullText("bicycle")]) == [Self.alice, Self.bob, Self.carol])
        #expect(try ids("gifts", [.fullText("kite AND bicycle")]) == [Self.bob])
        #expect(try ids("gifts", [.fullText("\"blue kite\"")]) == [Self.bob])
        #expect(try ids("gifts", [.fullText("deleted")]).isEmpty)
        #expect(try ids("notes", [.fullText("unicode")]) == [Self.note])
    }

    @Test(.requires(.sqlite3), .requiresVectors)
    func version1StoreMigratesAndEveryRecordOpens() throws {
        let (scratch, path, shell) = try version1Copy()
        defer { withExtendedLifetime(scratch) {} }
        let store = try RecordStore(storage: try SQLiteRecordStorage(path: path), configuration: testConfiguration)
        #expect(try sql(shell, path, "SELECT version FROM schema_version") == "4")
        #expect(try sql(shell, path, "SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'records_fts_%' ORDER BY name)")
            == "blind_indexes clear_fields collections meta records records_fts schema_version store_keys")
        #expect(try sql(shell, path, "PRAGMA integrity_check") == "ok")
        #expect(try sql(shell, path, "INSERT INTO records_fts (records_fts) VALUES ('integrity-check')").isEmpty)
        try store.unlock(with: appSealer)
        try expectFixtureContent(store)

        // The migrated store takes writes, and opening it again does not migrate anything.
        let eve = try store.add(["toWhom": "Eve", "note": "a bicycle pump", "ssn": "123-45-6789"], to: "gifts")
        try store.update(Self.bob, setting: ["note": "a green kite"])
        try store.delete(Self.alice)
        let again = try RecordStore(storage: try SQLiteRecordStorage(path: path), configuration: testConfiguration)
        try again.unlock(with: appSealer)
        #expect(try again.search(in: "gifts", [.fullText("bicycle")]).map(\.id) == [Self.carol, eve])
        #expect(try again.search(in: "gifts", [.fullText("kite")]).map(\.id) == [Self.bob])
        #expect(try again.search(in: "gifts", [.equals(field: "ssn", value: "123-45-6789")]).map(\.id) == [Self.dave, eve])
        #expect(try again.search(in: "gifts", [.equals(field: "toWhom", value: "Alice")]).isEmpty)
        #expect(try sql(shell, path, "INSERT INTO records_fts (records_fts) VALUES ('integrity-check')").isEmpty)
        // Key rotation rewrites every store-keyed row of the migrated store.
        try again.rotateStoreKey(with: appSealer)
        #expect(try again.open(Self.dave).fields["ssn"] == "123-45-6789")
        #expect(try again.search(in: "gifts", [.equals(field: "ssn", value: "123-45-6789")]).map(\.id) == [Self.dave, eve])
    }

    @Test(.requires(.sqlite3), .requiresVectors)
    func failedMigrationLeavesVersion1AndTheNextOpenMigrates() throws {
        let (scratch, path, shell) = try version1Copy()
        defer { withExtendedLifetime(scratch) {} }
        // The last record holds a clear value of an unknown kind: the migration writes the records
        // before it, then fails, and the transaction is rolled back.
        try sql(shell, path, "UPDATE clear_fields SET kind = 7 WHERE seq = 6")
        let before = try sql(shell, path, "SELECT sql FROM sqlite_schema ORDER BY name")
        let error = #expect(throws: RecordsError.self) { try SQLiteRecordStorage(path: path) }
        guard case .storage(let failure) = error else { Issue.record("not a storage error: \(String(describing: error))"); return }
        #expect(failure.cause == .malformedStorage)
        #expect(failure.message.contains("record row 6") && failure.message.contains("left at version 1"))
        #expect(try sql(shell, path, "SELECT version FROM schema_version") == "1")
        #expect(try sql(shell, path, "SELECT sql FROM sqlite_schema ORDER BY name") == before)
        #expect(try sql(shell, path, "SELECT count(*) FROM records") == "5")
        #expect(try sql(shell, path, "SELECT count(*) FROM sealed_fields") == "9")
        // Repaired, the next open migrates it.
        try sql(shell, path, "UPDATE clear_fields SET kind = 1 WHERE seq = 6")
        let store = try RecordStore(storage: try SQLiteRecordStorage(path: path), configuration: testConfiguration)
        #expect(try sql(shell, path, "SELECT version FROM schema_version") == "4")
        try store.unlock(with: appSealer)
        try expectFixtureContent(store)
    }

    @Test(.requires(.sqlite3), .requiresVectors)
    func inconsistentVersion1RowsAreRefusedNotDropped() throws {
        for corruption in [
            "UPDATE records SET id = x'00' WHERE seq = 2",
            "PRAGMA ignore_check_constraints = ON; UPDATE records SET keying = 5 WHERE seq = 2",
            "UPDATE records SET key_id = NULL WHERE seq = 2",
            "UPDATE blind_indexes SET key_id = 1 WHERE seq = 2",
        ] {
            let (scratch, path, shell) = try version1Copy()
            defer { withExtendedLifetime(scratch) {} }
            try sql(shell, path, corruption)
            #expect(throws: RecordsError.self, "\(corruption)") { try SQLiteRecordStorage(path: path) }
            #expect(try sql(shell, path, "SELECT version FROM schema_version") == "1", "\(corruption)")
        }
    }

    @Test(.requires(.sqlite3))
    func newerSchemaVersionIsRefusedUnchanged() throws {
        let shell = try TestSupport.path(of: .sqlite3)
        let scratch = try RecordsScratch()
        let store = try makeStore(scratch)
        _ = try store.add(["toWhom": "Alice"], to: "gifts")
        let path = scratch.path("store.db")
        #expect(try sql(shell, path, "SELECT version FROM schema_version") == "4")
        try sql(shell, path, "UPDATE schema_version SET version = 5")
        #expect(throws: RecordsError.unsupportedSchemaVersion(found: 5, supported: 4)) { try SQLiteRecordStorage(path: path) }
        #expect(try sql(shell, path, "SELECT version FROM schema_version") == "5")
        try sql(shell, path, "UPDATE schema_version SET version = 0")
        #expect(throws: RecordsError.self) { try SQLiteRecordStorage(path: path) }
    }

    @Test(.requires(.sqlite3))
    func malformedFieldMapInARowIsATypedError() throws {
        let shell = try TestSupport.path(of: .sqlite3)
        let scratch = try RecordsScratch()
        let store = try makeStore(scratch)
        let id = try store.add(["toWhom": "Alice", "description": "bike", "ssn": "1"], to: "gifts")
        let path = scratch.path("store.db")
        for column in ["clear", "sealed", "tokens"] {
            let original = try sql(shell, path, "SELECT hex(\(column)) FROM records")
            for bad in [original + "00", String(original.dropLast(2)), "0000000161"] {  // trailing, truncated, no value
                try sql(shell, path, "UPDATE records SET \(column) = x'\(bad)'")
                #expect(throws: RecordsError.self, "\(column) = \(bad)") { try store.open(id) }
            }
            try sql(shell, path, "UPDATE records SET \(column) = x'\(original)'")
        }
        #expect(try store.open(id).fields == ["toWhom": "Alice", "description": "bike", "ssn": "1"])
    }

    @Test func fieldMapHasOneEncoding() throws {
        let map = ["b": Data([1, 2]), "a": Data(), "é": Data([3]), "Z": Data([4, 5, 6])]
        let encoded = FieldMap.encode(map)
        #expect(try FieldMap.decode(encoded) == map)
        #expect(FieldMap.encode(clear: ["a": "x", "b": .bytes(Data([7]))]) == FieldMap.encode(["a": Data([1, 0x78]), "b": Data([2, 7])]))
        #expect(FieldMap.encode([:]).isEmpty)
        #expect(try FieldMap.decode([]) == [:])
        // Names in ascending UTF-8 byte order: "Z" (0x5A) < "a" < "b" < "é" (0xC3 0xA9).
        #expect(Array(encoded.prefix(5)) == [0, 0, 0, 1, 0x5A])
        // Every truncation and any trailing byte is refused.
        for count in 1..<encoded.count where !isEntryBoundary(encoded, count) {
            #expect(throws: FieldMap.Malformed.self, "truncated to \(count)") { try FieldMap.decode(Array(encoded.prefix(count))) }
        }
        #expect(throws: FieldMap.Malformed.self) { try FieldMap.decode(encoded + [0]) }
        func entry(_ name: [UInt8], _ value: [UInt8]) -> [UInt8] {
            [0, 0, 0, UInt8(name.count)] + name + [0, 0, 0, UInt8(value.count)] + value
        }
        // Unsorted, repeated, empty and non-UTF-8 names are refused.
        #expect(throws: FieldMap.Malformed.self) { try FieldMap.decode(entry([0x62], [1]) + entry([0x61], [2])) }
        #expect(throws: FieldMap.Malformed.self) { try FieldMap.decode(entry([0x61], [1]) + entry([0x61], [2])) }
        #expect(throws: FieldMap.Malformed.self) { try FieldMap.decode(entry([], [1])) }
        #expect(throws: FieldMap.Malformed.self) { try FieldMap.decode(entry([0xFF], [1])) }
        #expect(try FieldMap.decode(entry([0x61], [1]) + entry([0x62], [2])) == ["a": Data([1]), "b": Data([2])])
    }

    /// Whether the first `count` bytes of `encoded` end exactly after a whole entry (a valid, shorter map).
    func isEntryBoundary(_ bytes: [UInt8], _ count: Int) -> Bool {
        var offset = 0
        while offset < count {
            for _ in 0..<2 {
                guard offset + 4 <= bytes.count else { return false }
                let n = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
                offset += 4 + n
            }
        }
        return offset == count
    }
}
