import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureCore
import Testing

/// Issue 18: a collection or field name given once precomposed (NFC) and once decomposed (NFD)
/// split a collection in two: Swift compared the names as equal, the stores compared bytes. Now a
/// name has one byte form: new names are stored in NFC, and any spelling finds the stored one.
@Suite struct NameNormalizationTests {
    static let collectionNFC = "no\u{EB}l", collectionNFD = "noe\u{308}l"
    static let fieldNFC = "na\u{EF}ve", fieldNFD = "nai\u{308}ve"

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test("one collection and one field whatever the normalization, stored in NFC", arguments: Backend.enabled)
    func oneNameOneByteForm(_ backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try RecordStore(storage: try scratch.storage(), configuration: testConfiguration)
        try store.createCollection(Self.collectionNFD, schema: try RecordSchema([Self.fieldNFD: .sealedIndexed, "toWhom": .clear]))
        try store.createCollection(Self.collectionNFC, schema: try RecordSchema([Self.fieldNFC: .sealedIndexed, "toWhom": .clear]))
        try store.unlock(with: appSealer)
        let collections = try store.collections()
        #expect(collections.count == 1)
        #expect(collections.keys.map(Self.bytes) == [Self.bytes(Self.collectionNFC)], "stored in NFC")
        #expect(collections.values.first?.fields.keys.contains { Self.bytes($0) == Self.bytes(Self.fieldNFC) } == true)

        let first = try store.add([Self.fieldNFD: .string("Zoë"), "toWhom": .string("Alice")], to: Self.collectionNFD)
        let second = try store.add([Self.fieldNFC: .string("Zoë"), "toWhom": .string("Bob")], to: Self.collectionNFC)
        for spelling in [Self.collectionNFC, Self.collectionNFD] {
            #expect(Set(try store.search(in: spelling).map(\.id)) == [first, second], "search in \(spelling.unicodeScalars.count) scalars")
        }
        #expect(Set(try store.search().map(\.id)) == [first, second], "every collection")
        for field in [Self.fieldNFC, Self.fieldNFD] {
            let found = try store.search(in: Self.collectionNFC, [.equals(field: field, value: .string("Zoë"))])
            #expect(Set(found.map(\.id)) == [first, second], "blind index by either spelling of the field")
        }
        for id in [first, second] {
            let opened = try store.open(id)
            #expect(Self.bytes(opened.collection) == Self.bytes(Self.collectionNFC))
            #expect(opened.openedFields.keys.map(Self.bytes) == [Self.bytes(Self.fieldNFC)])
            #expect(opened.openedFields[Self.fieldNFC] == .string("Zoë"))
        }
        // Updating by the other spelling replaces the one field.
        try store.update(first, setting: [Self.fieldNFD: .string("Zoé")])
        #expect(try store.open(first).openedFields.count == 1)
        #expect(try store.search(in: Self.collectionNFD, [.equals(field: Self.fieldNFC, value: .string("Zoé"))]).map(\.id) == [first])
    }

    /// Rows an earlier version wrote under a second spelling of the collection and of a clear
    /// field (what `add --collection noël` in NFC did to a collection created in NFD) are found.
    @Test("rows written under another spelling by an earlier version are found", arguments: Backend.enabled)
    func rowsUnderAnotherSpellingAreFound(_ backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let storage = try scratch.storage()
        let store = try RecordStore(storage: storage, configuration: testConfiguration)
        try store.createCollection(Self.collectionNFC, schema: try RecordSchema([Self.fieldNFC: .clear]))
        let current = try store.add([Self.fieldNFC: .string("x")], to: Self.collectionNFC)
        let legacy = UUID()
        try storage.insert([
            StoredRecord(
                id: legacy, collection: Self.collectionNFD, keying: .storeKey, keyId: nil, clear: [Self.fieldNFD: .string("x")],
                sealed: [:], blindIndexes: [:])
        ])
        #expect(Set(try store.search(in: Self.collectionNFC).map(\.id)) == [current, legacy])
        #expect(Set(try store.search().map(\.id)) == [current, legacy])
        #expect(Set(try store.search(in: Self.collectionNFD, [.equals(field: Self.fieldNFC, value: .string("x"))]).map(\.id)) == [current, legacy])
        #expect(Set(try store.search(in: Self.collectionNFC, [.prefix(field: Self.fieldNFD, prefix: "x")]).map(\.id)) == [current, legacy])
    }

    /// Tests/Vectors/records/nfd-names.db: made by `sf records add` before names were normalized
    /// (the code of commit dafc688), collection `noël` and field `naïve` both in NFD, with the test
    /// application key. It keeps working, and its names keep their stored spelling.
    @Test("a store made by the earlier code with NFD names keeps working")
    func earlierStoreWithNFDNames() throws {
        let scratch = try RecordsScratch()
        let data = try #require(try TestSupport.vector("records/nfd-names.db"))
        let path = try scratch.write("nfd.db", data)
        let store = try RecordStore(storage: try SQLiteRecordStorage(path: path), configuration: testConfiguration)
        try store.unlock(with: appSealer)
        #expect(try store.collections().keys.map(Self.bytes) == [Self.bytes(Self.collectionNFD)])
        let old = try #require(try store.search(in: Self.collectionNFC).first)
        #expect(try store.open(old.id).fields == [Self.fieldNFC: .string("Zoë"), "toWhom": .string("Alice"), "ssn": .string("123-45-6789")])
        #expect(try store.search(in: Self.collectionNFC, [.equals(field: Self.fieldNFC, value: .string("Zoë"))]).map(\.id) == [old.id])
        #expect(try store.search(in: Self.collectionNFC, [.equals(field: "ssn", value: .string("123-45-6789"))]).map(\.id) == [old.id])
        // A new record, named in NFC, joins the stored (NFD) spelling.
        let new = try store.add([Self.fieldNFC: .string("Zoë"), "toWhom": .string("Bob")], to: Self.collectionNFC)
        #expect(Self.bytes(try store.record(new).collection) == Self.bytes(Self.collectionNFD))
        #expect(Set(try store.search(in: Self.collectionNFD, [.equals(field: Self.fieldNFD, value: .string("Zoë"))]).map(\.id)) == [old.id, new])
    }
}
