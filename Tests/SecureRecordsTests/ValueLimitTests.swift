import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureCore
import Testing

/// A value above `RecordStore.Configuration.maximumValueBytes` is refused with `valueTooLarge` by
/// every write, on both backends, and nothing is written; one at the limit is stored. (Without the
/// limit, a value of 2 GiB or more trapped on the `COPY` path's 32-bit lengths, and one near 1 GB
/// failed differently on each backend.)
@Suite struct ValueLimitTests {
    static let limit = 1_000

    @Test(arguments: Backend.enabled)
    func everyWriteRefusesAValueAboveTheLimit(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        var configuration = testConfiguration
        configuration.maximumValueBytes = Self.limit
        let store = try RecordStore(storage: try scratch.storage(), configuration: configuration)
        try store.createCollection("gifts", schema: giftSchema)
        try store.unlock(with: appSealer)

        // The limit counts bytes, not characters: 500 "é" are 1,000 bytes of UTF-8.
        let atLimit = String(repeating: "é", count: Self.limit / 2)
        let above = atLimit + "a"
        let bytesAtLimit = Data(repeating: 0xA5, count: Self.limit)
        let fields: [String: FieldValue] = ["toWhom": .string(atLimit), "description": .string(atLimit), "blob": .bytes(bytesAtLimit)]
        let stored = try store.add(fields, to: "gifts")
        let password = try store.add(fields, to: "gifts", sealing: .password(secret("pw")))
        #expect(try store.open(stored).fields == fields)
        #expect(try store.open(password, password: secret("pw")).fields == fields)

        func refused(_ field: String, _ what: String, _ write: () throws -> Void) {
            #expect(throws: RecordsError.valueTooLarge(field: field, limit: Self.limit), "\(what)") { try write() }
        }
        let tooLarge: [(field: String, value: FieldValue)] = [
            ("toWhom", .string(above)), ("description", .string(above)), ("blob", .bytes(bytesAtLimit + Data([0]))),
            ("ssn", .bytes(Data(count: Self.limit + 1))),
        ]
        let stateBefore = try store.search().map(\.id).sorted()
        for (field, value) in tooLarge {
            let record = ["toWhom": FieldValue.string("Bo")].merging([field: value]) { _, new in new }
            refused(field, "add") { _ = try store.add(record, to: "gifts") }
            refused(field, "add with a password") { _ = try store.add(record, to: "gifts", sealing: .password(secret("pw"))) }
            // The last of more than one sealing group (256 records each): nothing of the load is stored.
            let load = Array(repeating: ["toWhom": FieldValue.string("Cy")], count: 600) + [record]
            refused(field, "add(contentsOf:)") { _ = try store.add(contentsOf: load, to: "gifts") }
            refused(field, "update") { try store.update(stored, setting: [field: value]) }
            refused(field, "update of a password record") { try store.update(password, setting: [field: value], password: secret("pw")) }
        }
        let reopened = try scratch.reopen(configuration: configuration)
        try reopened.unlock(with: appSealer)
        #expect(try reopened.search().map(\.id).sorted() == stateBefore)
        #expect(try reopened.open(stored).fields == fields)
        #expect(try reopened.open(password, password: secret("pw")).fields == fields)
    }

    /// The default limit, 256 MiB, refuses one byte more on both backends before any copy of the
    /// value is made (the test's value is never touched, so never allocated).
    @Test(arguments: Backend.enabled)
    func theDefaultLimitIs256MiB(backend: Backend) throws {
        #expect(RecordStore.Configuration().maximumValueBytes == 256 << 20)
        let scratch = try RecordsScratch(backend)
        let store = try RecordStore(storage: try scratch.storage())
        try store.createCollection("gifts", schema: giftSchema)
        try store.unlock(with: appSealer)
        let huge = FieldValue.bytes(Data(count: (256 << 20) + 1))
        #expect(throws: RecordsError.valueTooLarge(field: "blob", limit: 256 << 20)) { try store.add(["blob": huge], to: "gifts") }
        #expect(throws: RecordsError.valueTooLarge(field: "photo", limit: 256 << 20)) {
            try store.add(contentsOf: [["toWhom": "Bo"], ["photo": huge]], to: "gifts")
        }
        #expect(try store.search().isEmpty)
    }
}
