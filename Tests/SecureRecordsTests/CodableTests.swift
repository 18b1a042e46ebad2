import Foundation
@testable import SecureRecords
import SecureCore
import Testing

struct Gift: RecordCodable, Equatable {
    var toWhom: String
    var description: String
    var price: Int
    var tags: [String]
    var code: String?
    enum CodingKeys: String, CodingKey, CaseIterable { case toWhom, description, price, tags, code }
    typealias Field = CodingKeys
    static let sealedFields: Set<String> = ["description", "price"]
    static let blindIndexedFields: Set<String> = ["code"]
}

@Suite struct CodableTests {
    @Test(arguments: Backend.enabled)
    func codableRecordsRoundTrip(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try scratch.reopen("c.db")
        try store.unlock(with: appSealer)
        try store.createCollection("gifts", for: Gift.self)
        #expect(try store.schema(of: "gifts") == (try RecordSchema([
            "toWhom": .clear, "description": .sealed, "price": .sealed, "tags": .clear, "code": .sealedIndexed,
        ])))
        let gift = Gift(toWhom: "Alice", description: "a red bicycle", price: 120, tags: ["red", "big"], code: "X-1")
        let id = try store.add(gift, to: "gifts")
        #expect(try store.open(Gift.self, id) == gift)
        let closed = try store.record(id)
        #expect(closed.clearFields["toWhom"] == "Alice")
        #expect(closed.sealedFieldNames == ["code", "description", "price"])
        #expect(try store.search(in: "gifts", [.equals(field: "code", value: "X-1")]).map(\.id) == [id])
        // Password records (no indexed value set).
        let plain = Gift(toWhom: "Bob", description: "kite", price: 5, tags: [], code: nil)
        let bob = try store.add(plain, to: "gifts", sealing: .password(secret("pw")))
        #expect(try store.open(Gift.self, bob, password: secret("pw")) == plain)
        #expect(throws: RecordsError.self) { try store.open(Gift.self, bob, password: secret("no")) }
    }
}
