import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureCore
import Testing

/// `add(contentsOf:)` seals groups of batches on every core while the storage writes the group before:
/// order, atomicity and every field must survive that.
@Suite struct BatchTests {
    static func gift(_ i: Int) -> [String: FieldValue] {
        ["toWhom": .string("person-\(i % 7)"), "note": .string("note \(i)"), "description": .string("secret \(i)"),
         "ssn": .string("ssn-\(i)")]
    }

    @Test(arguments: Backend.enabled)
    func largeBatchIsStoredInOrderAndOpens(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let count = 1_000  // four sealing batches of 256
        let ids = try store.add(contentsOf: (0..<count).map(Self.gift), to: "gifts")
        #expect(ids.count == count && Set(ids).count == count)
        // Storage order is the order given, and every record opens to its own fields.
        let stored = try store.storage.allRecords(after: 0, limit: count + 1).records
        #expect(stored.map(\.id) == ids)
        for i in stride(from: 0, to: count, by: 97) {
            #expect(try store.open(ids[i]).fields == Self.gift(i))
        }
        // Blind indexes were computed for every batch.
        for i in [0, 255, 256, 511, 999] {
            #expect(try store.search(in: "gifts", [.equals(field: "ssn", value: .string("ssn-\(i)"))]).map(\.id) == [ids[i]])
        }
        #expect(try store.search(in: "gifts", [.equals(field: "toWhom", value: "person-3")]).count == count / 7 + 1)
    }

    @Test(arguments: Backend.enabled)
    func aFailureInALateBatchInsertsNothing(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        var records = (0..<900).map(Self.gift)
        records[800]["undeclared"] = "x"  // in the fourth batch, sealed while the first ones are written
        #expect(throws: RecordsError.unknownField(collection: "gifts", field: "undeclared")) {
            try store.add(contentsOf: records, to: "gifts")
        }
        #expect(try store.storage.allRecords(after: 0, limit: 10).records.isEmpty)
        // The store still takes the batch once it is fixed.
        records[800]["undeclared"] = nil
        #expect(try store.add(contentsOf: records, to: "gifts").count == 900)
    }

    @Test(arguments: Backend.enabled)
    func passwordBatchOpensWithItsPassword(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch, unlock: false)
        let records = (0..<300).map { ["toWhom": FieldValue.string("p\($0)"), "description": .string("d\($0)")] }
        let ids = try store.add(contentsOf: records, to: "gifts", sealing: .password(secret("pw")))
        #expect(try store.open(ids[299], password: secret("pw")).fields == records[299])
        #expect(throws: RecordsError.self) { try store.open(ids[0], password: secret("wrong")) }
    }
}
