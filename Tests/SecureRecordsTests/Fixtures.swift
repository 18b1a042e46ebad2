import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureRecordsPostgres
import SecureCore
import Testing

/// A tiny scrypt cost so tamper loops stay fast (the default cost is exercised by the CLI tests).
let testKDF = PasswordKDF.scrypt(logN: 4, r: 1, p: 1)
let testConfiguration = RecordStore.Configuration(passwordKDF: testKDF, rotationBatchSize: 3)

func secret(_ text: String) -> SecretBytes { SecretBytes(Data(text.utf8)) }

/// A storage backend the storage-level tests run against (one suite, both backends).
enum Backend: String, Sendable, CaseIterable, CustomStringConvertible {
    case sqlite
    case postgres

    var description: String { rawValue }

    /// SQLite always; PostgreSQL when `SF_TEST_POSTGRES_URL` names a server, and always under CI
    /// (where a missing server then fails). `PostgresTests.postgresServerIsConfigured` shows as
    /// skipped when it is not.
    static let enabled: [Backend] = TestSupport.peerAvailable(.postgres) ? [.sqlite, .postgres] : [.sqlite]
}

/// The test server's configuration with `schema` and `prefix`, or `PeerMissing` (under CI).
func postgresConfiguration(schema: String = "public", prefix: String = "sfr_") throws -> PostgresRecordStorage.Configuration {
    guard let url = TestSupport.postgresURL else { throw PeerMissing(peer: .postgres) }
    var configuration = try PostgresRecordStorage.Configuration(url: url, password: TestSupport.postgresPassword.map { SecretBytes(Data($0.utf8)) })
    configuration.schema = schema
    configuration.tablePrefix = prefix
    return configuration
}

/// The record tests' scratch directory (`sf-records-…`), and for PostgreSQL a fresh schema
/// (`sfr_t_…`, dropped with the directory): each named store is a table prefix in it.
final class RecordsScratch: ScratchDirectory, @unchecked Sendable {
    let backend: Backend
    /// The fresh PostgreSQL schema of this test.
    let schema = "sfr_t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
    private let cleanup = Locked<PostgresRecordStorage?>(nil)

    init(_ backend: Backend = .sqlite) throws {
        self.backend = backend
        try super.init("sf-records")
    }

    deinit {
        if let storage = cleanup.withLock({ $0 }) {
            try? storage.execute("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
            storage.close()
        }
    }

    /// The table prefix of store `name` ("store.db" → "store_db_").
    static func prefix(_ name: String) -> String {
        String(name.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }) + "_"
    }

    /// A new storage (a new connection for PostgreSQL) of store `name`.
    func storage(_ name: String = "store.db") throws -> any RecordStorage {
        switch backend {
        case .sqlite:
            return try SQLiteRecordStorage(path: path(name))
        case .postgres:
            let storage = try PostgresRecordStorage(configuration: try postgresConfiguration(schema: schema, prefix: Self.prefix(name)))
            cleanup.withLock { if $0 == nil { $0 = try? PostgresRecordStorage(configuration: storage.configuration) } }
            return storage
        }
    }

    /// Store `name` opened again (a new connection for PostgreSQL), locked.
    func reopen(_ name: String = "store.db", configuration: RecordStore.Configuration = testConfiguration) throws -> RecordStore {
        try RecordStore(storage: try storage(name), configuration: configuration)
    }
}

/// The application's key (what `KeyItemSealer` wraps the store key with).
let appKey = SecretBytes(Data((0..<32).map { UInt8($0) }))
let appSealer = try! KeyItemSealer(key: appKey)

let giftSchema = try! RecordSchema([
    "toWhom": .clear, "note": .clear, "photo": .clear, "description": .sealed, "blob": .sealed, "ssn": .sealedIndexed,
])

/// A fresh store (of the scratch's backend) with the `gifts` collection, unlocked with `appSealer`.
func makeStore(_ scratch: RecordsScratch, name: String = "store.db", unlock: Bool = true) throws -> RecordStore {
    let store = try RecordStore(storage: try scratch.storage(name), configuration: testConfiguration)
    try store.createCollection("gifts", schema: giftSchema)
    if unlock { try store.unlock(with: appSealer) }
    return store
}

/// `sf`, when built with the tests.
func sfBinary() throws -> String {
    try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests -Xcc -O2)").path
}

/// Runs `sf`.
func sf(_ arguments: [String], stdin: Data = Data()) throws -> ProcessResult {
    try TestSupport.run(try sfBinary(), arguments, stdin: stdin, environment: ["SF_HOME": NSTemporaryDirectory() + "sf-records-home"])
}

/// `row` with the MAC a store-keyed record would get from `store` (unlocked): a test that tampers
/// with a sealed value uses it to reach the sealed value's own binding, which lies behind the MAC.
func authenticated(_ row: StoredRecord, by store: RecordStore) throws -> StoredRecord {
    guard row.keying == .storeKey else { return row }
    var copy = row
    try store.authenticateOrRequireNoStoreKey(&copy)
    return copy
}

/// Waits (on events: lock requests queued in the server, or `ended`) at most 60 s until `count`
/// requests for the store's advisory lock (docs/FORMATS.md, "How rows are written") wait in the
/// server.
func waitForStoreLockWaiters(_ count: Int, in storage: PostgresRecordStorage, orEnded ended: () -> Bool) throws {
    let waiters = """
        WITH k AS (SELECT ('x' || encode(substring(store_id FROM 1 FOR 8), 'hex'))::bit(64)::bigint AS h FROM \(storage.tableName("store")))
        SELECT count(*)::text FROM pg_locks, k WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
        AND classid::bigint = ((h >> 32) & 4294967295) AND objid::bigint = (h & 4294967295)
        """
    let deadline = Date(timeIntervalSinceNow: 60)
    while !ended(), try storage.queryText(waiters) != [String(count)], Date() < deadline { usleep(10_000) }
}
