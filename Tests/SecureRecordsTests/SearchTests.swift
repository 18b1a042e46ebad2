import Foundation
@testable import SecureRecords
import SecureRecordsPostgres
import SecureCore
import Testing

@Suite struct SearchTests {
    func populated(_ backend: Backend) throws -> (RecordsScratch, RecordStore, [String: UUID]) {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        var ids: [String: UUID] = [:]
        ids["alice"] = try store.add(["toWhom": "Alice", "note": "red bicycle for the garden", "ssn": "123-45-6789"], to: "gifts")
        ids["alina"] = try store.add(["toWhom": "Alina", "note": "blue kite", "ssn": "123-45-6780"], to: "gifts")
        ids["bob"] = try store.add(["toWhom": "Bob", "note": "a bicycle bell", "ssn": "123-45-6789"], to: "gifts")
        ids["carol"] = try store.add(["toWhom": "Carol", "photo": .bytes(Data([1, 2])), "description": "secret bicycle"], to: "gifts")
        return (scratch, store, ids)
    }

    @Test(arguments: Backend.enabled)
    func clearEqualityAndPrefix(backend: Backend) throws {
        let (scratch, store, ids) = try populated(backend)
        defer { withExtendedLifetime(scratch) {} }
        #expect(try store.search(in: "gifts", [.equals(field: "toWhom", value: "Alice")]).map(\.id) == [ids["alice"]])
        #expect(try store.search(in: "gifts", [.equals(field: "toWhom", value: "alice")]).isEmpty)
        #expect(try store.search(in: "gifts", [.prefix(field: "toWhom", prefix: "Ali")]).map(\.id) == [ids["alice"], ids["alina"]])
        #expect(try store.search(in: "gifts", [.prefix(field: "toWhom", prefix: "Alic")]).map(\.id) == [ids["alice"]])
        #expect(try store.search(in: "gifts", [.prefix(field: "toWhom", prefix: "")]).count == 4)
        #expect(try store.search(in: "gifts", [.equals(field: "photo", value: .bytes(Data([1, 2])))]).map(\.id) == [ids["carol"]])
        #expect(try store.search(in: "gifts", [.equals(field: "photo", value: "\u{1}\u{2}")]).isEmpty)  // text is not bytes
        // Without a collection: every collection whose schema has the field.
        #expect(try store.search([.equals(field: "toWhom", value: "Bob")]).map(\.id) == [ids["bob"]])
        #expect(throws: RecordsError.fieldProtectionMismatch(
            collection: "gifts", field: "description", reason: "sealed without a blind index; it cannot be searched")
        ) { try store.search(in: "gifts", [.equals(field: "description", value: "x")]) }
        #expect(throws: RecordsError.self) { try store.search(in: "gifts", [.prefix(field: "ssn", prefix: "1")]) }
    }

    @Test(arguments: Backend.enabled)
    func blindIndexEqualityWithoutDecrypting(backend: Backend) throws {
        let (scratch, store, ids) = try populated(backend)
        defer { withExtendedLifetime(scratch) {} }
        let found = try store.search(in: "gifts", [.equals(field: "ssn", value: "123-45-6789")])
        #expect(found.map(\.id) == [ids["alice"], ids["bob"]])
        #expect(found.allSatisfy { $0.openedFields.isEmpty })
        // Near values do not match.
        for near in ["123-45-678", "123-45-67890", "123-45-6788", " 123-45-6789", "123456789"] {
            #expect(try store.search(in: "gifts", [.equals(field: "ssn", value: .string(near))]).isEmpty, "\(near)")
        }
        #expect(try store.search(in: "gifts", [.equals(field: "ssn", value: .bytes(Data("123-45-6789".utf8)))]).isEmpty)
        // Combined with a clear condition.
        #expect(try store.search(in: "gifts", [.equals(field: "ssn", value: "123-45-6789"), .equals(field: "toWhom", value: "Bob")])
            .map(\.id) == [ids["bob"]])
        // The stored token is 64 bits and is not the value.
        let aliceId = try #require(ids["alice"]), bobId = try #require(ids["bob"])
        let row = try #require(try store.storage.record(aliceId))
        let bobRow = try #require(try store.storage.record(bobId))
        #expect(row.blindIndexes["ssn"]?.count == 8)
        #expect(row.blindIndexes["ssn"] == bobRow.blindIndexes["ssn"])
    }

    @Test(arguments: Backend.enabled)
    func blindIndexIsKeyedPerFieldAndCollection(backend: Backend) throws {
        let (scratch, store, _) = try populated(backend)
        try store.createCollection("people", schema: try RecordSchema(["ssn": .sealedIndexed, "tax": .sealedIndexed]))
        let person = try store.add(["ssn": "123-45-6789", "tax": "123-45-6789"], to: "people")
        let row = try #require(try store.storage.record(person))
        #expect(row.blindIndexes["ssn"] != row.blindIndexes["tax"])
        let gift = try #require(try store.search(in: "gifts", [.equals(field: "ssn", value: "123-45-6789")]).first)
        let giftRow = try #require(try store.storage.record(gift.id))
        #expect(giftRow.blindIndexes["ssn"] != row.blindIndexes["ssn"])
        // Another store (another store key) gives other tokens for the same value.
        let other = try makeStore(scratch, name: "other.db")
        let id = try other.add(["ssn": "123-45-6789"], to: "gifts")
        let otherRow = try #require(try other.storage.record(id))
        #expect(otherRow.blindIndexes["ssn"] != giftRow.blindIndexes["ssn"])
    }

    @Test(arguments: Backend.enabled)
    func fullTextQueries(backend: Backend) throws {
        let (scratch, store, ids) = try populated(backend)
        defer { withExtendedLifetime(scratch) {} }
        func found(_ query: String) throws -> Set<UUID?> { Set(try store.search(in: "gifts", [.fullText(query)]).map(\.id)) }
        #expect(try found("bicycle") == [ids["alice"], ids["bob"]])  // carol's bicycle is sealed: not indexed
        #expect(try found("\"bicycle bell\"") == [ids["bob"]])
        #expect(try found("bic*") == [ids["alice"], ids["bob"]])
        #expect(try found("kite OR bell") == [ids["alina"], ids["bob"]])
        #expect(try found("bicycle NOT garden") == [ids["bob"]])
        #expect(try found("Carol") == [ids["carol"]])
        #expect(try found("secret").isEmpty)
        #expect(try store.search(in: "gifts", [.fullText("bicycle"), .prefix(field: "toWhom", prefix: "B")]).map(\.id) == [ids["bob"]])
        #expect(throws: RecordsError.self) { try store.search(in: "gifts", [.fullText("\"unterminated")]) }
        // The documented subset gives the same results on both backends (FTS5 on SQLite, tsquery on PostgreSQL).
        #expect(try found("RED") == [ids["alice"]])  // case-folded
        #expect(try found("bicycle AND (kite OR bell)") == [ids["bob"]])  // parentheses
        #expect(try found("bicycle NOT red garden") == [ids["bob"]])  // implicit AND binds tighter than NOT
        #expect(throws: RecordsError.self) { try store.search(in: "gifts", [.fullText("(kite OR bell) bicycle")]) }  // as FTS5
        #expect(try found("bicycle AND bell") == [ids["bob"]])
        #expect(try found("\"bicycle b\"*") == [ids["bob"]])  // phrase with a prefix last token
        #expect(try found("\"red bicycle for\"") == [ids["alice"]])
        #expect(try found("\"bicycle red\"").isEmpty)  // order matters in a phrase
        #expect(try found("kite OR bell NOT bicycle") == [ids["alina"]])  // NOT binds tighter than OR
        #expect(try found("alice OR alina OR bob") == [ids["alice"], ids["alina"], ids["bob"]])  // clear fields: one per line
        #expect(try found("garden alice") == [ids["alice"]])  // across fields
        #expect(throws: RecordsError.self) { try store.search(in: "gifts", [.fullText("(kite")]) }
        #expect(throws: RecordsError.self) { try store.search(in: "gifts", [.fullText("kite OR")]) }
        // FTS5 features outside the shared syntax are refused, typed, on both backends.
        #expect(throws: RecordsError.invalidQuery("full-text query: NEAR is not supported")) {
            try store.search(in: "gifts", [.fullText("NEAR(kite bell)")])
        }
        #expect(throws: RecordsError.self) { try store.search(in: "gifts", [.fullText("note:kite")]) }
        // Updates and deletes keep the index in step.
        let bob = try #require(ids["bob"])
        try store.update(bob, setting: ["note": "a drum"])
        #expect(try found("bell").isEmpty)
        #expect(try found("drum") == [bob])
        try store.delete(bob)
        #expect(try found("drum").isEmpty)
    }
}

/// Issue 19 item 4: one nesting and length limit for full-text queries on both backends. 30,000
/// nested parentheses crashed the PostgreSQL translator (unbounded recursion); SQLite returned
/// its own error. Both now give `invalidQuery` before the backend sees the query.
@Suite struct FullTextLimitTests {
    @Test(arguments: Backend.enabled)
    func deepAndLongQueriesAreInvalidOnBothBackends(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        _ = try store.add(["toWhom": "Alice", "note": "a red bicycle"], to: "gifts")
        let deep = String(repeating: "(", count: 30_000) + "bicycle" + String(repeating: ")", count: 30_000)
        let long = Array(repeating: "bicycle", count: 200).joined(separator: " OR ")
        for query in [deep, long, String(repeating: "(", count: 33) + "bicycle" + String(repeating: ")", count: 33)] {
            #expect(throws: RecordsError.self) { try store.search(in: "gifts", [.fullText(query)]) }
            var direct = StorageQuery(collection: "gifts")
            direct.fullText = query
            #expect(throws: RecordsError.self) { try store.storage.search(direct) }
        }
        // At the limits the query runs, with the same result on both backends.
        let nested = String(repeating: "(", count: 32) + "bicycle" + String(repeating: ")", count: 32)
        #expect(try store.search(in: "gifts", [.fullText(nested)]).count == 1)
        let quotedParentheses = "\"" + String(repeating: "(", count: 40) + "bicycle\""
        #expect(try store.search(in: "gifts", [.fullText(quotedParentheses)]).count == 1)
        #expect(throws: RecordsError.self) { try PostgresFullText.tsquery(deep) }
    }
}
