import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureCore
import Testing

/// A tiny scrypt cost so tamper loops stay fast (the default cost is exercised by the CLI tests).
let testKDF = PasswordKDF.scrypt(logN: 4, r: 1, p: 1)
let testConfiguration = RecordStore.Configuration(passwordKDF: testKDF, rotationBatchSize: 3)

func secret(_ text: String) -> SecretBytes { SecretBytes(Data(text.utf8)) }

/// The record tests' scratch directory (`sf-records-…`).
final class RecordsScratch: ScratchDirectory, @unchecked Sendable {
    init() throws { try super.init("sf-records") }
}

/// The application's key (what `KeyItemSealer` wraps the store key with).
let appKey = SecretBytes(Data((0..<32).map { UInt8($0) }))
let appSealer = try! KeyItemSealer(key: appKey)

let giftSchema = try! RecordSchema([
    "toWhom": .clear, "note": .clear, "photo": .clear, "description": .sealed, "blob": .sealed, "ssn": .sealedIndexed,
])

/// A fresh SQLite store with the `gifts` collection, unlocked with `appSealer`.
func makeStore(_ scratch: RecordsScratch, name: String = "store.db", unlock: Bool = true) throws -> RecordStore {
    let store = try RecordStore(path: scratch.path(name), configuration: testConfiguration)
    try store.createCollection("gifts", schema: giftSchema)
    if unlock { try store.unlock(with: appSealer) }
    return store
}

/// `sf`, when built with the tests.
func sfBinary() throws -> String {
    try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests)").path
}

/// Runs `sf`.
func sf(_ arguments: [String], stdin: Data = Data()) throws -> ProcessResult {
    try TestSupport.run(try sfBinary(), arguments, stdin: stdin, environment: ["SF_HOME": NSTemporaryDirectory() + "sf-records-home"])
}
