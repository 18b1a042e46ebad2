import Foundation
import SQLiteSupport
import SecureCore

/// `RecordStorage` in one SQLite file (the system library, through the wrapper SecureKeychain uses):
/// file mode 0600, WAL journal, `synchronous = FULL` (a returned write is durable), `BEGIN IMMEDIATE`
/// write transactions and a busy timeout, so several processes can write one file. The tables
/// (schema version 2) are documented in docs/FORMATS.md ("SecureRecords"); opening a version 1 store
/// migrates it to version 2 in one transaction, and a newer version is refused (`unsupportedSchemaVersion`).
public final class SQLiteRecordStorage: RecordStorage, Sendable {
    private let connection: Locked<SQLiteConnection>
    /// The database file.
    public let path: String

    /// Opens (creating, mode 0600, parent directory 0700) the store file at `path`, migrating a
    /// schema version 1 store to version 2 in one transaction (all or nothing: after a failure or a
    /// crash the file is still version 1). A file that is a SQLite database of something else throws
    /// `notARecordStore`; one of a newer schema version throws `unsupportedSchemaVersion`, unchanged.
    public init(path: String, busyTimeoutMilliseconds: Int32 = 10_000) throws(RecordsError) {
        self.path = path
        let connection = try Self.sql { () throws(SQLiteError) in
            try SQLiteConnection.openDurable(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        }
        try Self.migrate(connection)
        // 32 MiB of page cache: index pages of large stores stay in memory during bulk writes.
        try Self.sql { () throws(SQLiteError) in try connection.execute("PRAGMA cache_size = -32768") }
        self.connection = Locked(connection)
    }

    static func map(_ error: SQLiteError) -> RecordsError {
        .storage(StorageFailure(.sqlite(code: error.code), error.description))
    }

    static func sql<R>(_ body: () throws(SQLiteError) -> R) throws(RecordsError) -> R {
        do throws(SQLiteError) {
            return try body()
        } catch {
            throw map(error)
        }
    }

    /// Runs `body` holding the connection inside one transaction.
    func transaction<R>(write: Bool, _ body: (SQLiteConnection) throws(RecordsError) -> R) throws(RecordsError) -> R {
        try connection.withLock { (c: inout SQLiteConnection) throws(RecordsError) -> R in
            let db = c
            return try db.transaction(write: write, mapError: Self.map) { () throws(RecordsError) -> R in try body(db) }
        }
    }

    // MARK: Metadata and keys

    /// `RecordStorage.loadMetadata`, in one SQLite transaction.
    public func loadMetadata() throws(RecordsError) -> StoreMetadata? {
        try transaction(write: false) { (c) throws(RecordsError) in try Self.loadMetadata(c) }
    }

    static func loadMetadata(_ c: SQLiteConnection) throws(RecordsError) -> StoreMetadata? {
        let stored = try sql { () throws(SQLiteError) -> (storeId: Data, current: Int64?, keys: [(Int64, Data)])? in
            let meta = try c.statement("SELECT name, value FROM meta")
            var storeId: Data?
            var current: Int64?
            while try meta.step() {
                switch meta.text(0) {
                case "storeId": storeId = meta.blob(1)
                case "currentKeyId": current = meta.int64(1)
                default: break
                }
            }
            guard let storeId else { return nil }
            var keys: [(Int64, Data)] = []
            let select = try c.statement("SELECT id, wrapped FROM store_keys ORDER BY id")
            while try select.step() { keys.append((select.int64(0), select.blob(1))) }
            return (storeId, current, keys)
        }
        guard let stored else { return nil }
        var keys: [WrappedStoreKey] = []
        for (id, wrapped) in stored.keys {
            keys.append(WrappedStoreKey(id: try WrappedStoreKey.id(stored: id, in: "a store key row"), wrapped: wrapped))
        }
        let current = try stored.current.map { (id) throws(RecordsError) in try WrappedStoreKey.id(stored: id, in: "the current key") }
        return StoreMetadata(storeId: stored.storeId, currentKeyId: current, keys: keys)
    }

    /// `RecordStorage.initialize`, in one SQLite transaction.
    public func initialize(_ metadata: StoreMetadata) throws(RecordsError) -> StoreMetadata {
        try transaction(write: true) { (c) throws(RecordsError) in try Self.initialize(metadata, c) }
    }

    /// `initialize`, in the connection's open transaction.
    private static func initialize(_ metadata: StoreMetadata, _ c: SQLiteConnection) throws(RecordsError) -> StoreMetadata {
        if let existing = try loadMetadata(c) { return existing }
        try sql { () throws(SQLiteError) in
            let insert = try c.statement("INSERT INTO meta (name, value) VALUES (?1, ?2)")
            insert.bind(1, "storeId")
            insert.bind(2, metadata.storeId)
            try insert.step()
            if let current = metadata.currentKeyId { try setCurrent(current, c) }
            for key in metadata.keys { try insertKey(key, c) }
        }
        return metadata
    }

    private static func setCurrent(_ keyId: UInt32, _ c: SQLiteConnection) throws(SQLiteError) {
        let update = try c.statement("INSERT OR REPLACE INTO meta (name, value) VALUES ('currentKeyId', ?1)")
        update.bind(1, Int64(keyId))
        try update.step()
    }

    private static func insertKey(_ key: WrappedStoreKey, _ c: SQLiteConnection) throws(SQLiteError) {
        let insert = try c.statement("INSERT INTO store_keys (id, wrapped) VALUES (?1, ?2)")
        insert.bind(1, Int64(key.id))
        insert.bind(2, key.wrapped)
        try insert.step()
    }

    /// `RecordStorage.rewrapKeys`, in one SQLite transaction.
    public func rewrapKeys(_ keys: [WrappedStoreKey]) throws(RecordsError) {
        try transaction(write: true) { (c) throws(RecordsError) in
            for key in keys {
                let changed = try Self.sql { () throws(SQLiteError) -> Int64 in
                    let update = try c.statement("UPDATE store_keys SET wrapped = ?2 WHERE id = ?1")
                    update.bind(1, Int64(key.id))
                    update.bind(2, key.wrapped)
                    try update.step()
                    return c.changes
                }
                guard changed == 1 else { throw .storeKeyUnavailable("store key \(key.id) is not in the store") }
            }
        }
    }

    /// `RecordStorage.addKey`, in one SQLite transaction.
    public func addKey(_ key: WrappedStoreKey, makeCurrent: Bool) throws(RecordsError) -> Bool {
        try transaction(write: true) { (c) throws(RecordsError) in
            try Self.sql { () throws(SQLiteError) -> Bool in
                let exists = try c.statement("SELECT count(*) FROM store_keys WHERE id = ?1")
                exists.bind(1, Int64(key.id))
                _ = try exists.step()
                guard exists.int64(0) == 0 else { return false }
                exists.reset()
                try Self.insertKey(key, c)
                if makeCurrent { try Self.setCurrent(key.id, c) }
                return true
            }
        }
    }

    // MARK: Collections

    /// `RecordStorage.collections`, in one SQLite transaction.
    public func collections() throws(RecordsError) -> [String: RecordSchema] {
        try transaction(write: false) { (c) throws(RecordsError) in try Self.collections(c) }
    }

    private static func collections(_ c: SQLiteConnection) throws(RecordsError) -> [String: RecordSchema] {
        let rows = try sql { () throws(SQLiteError) -> [(String, String)] in
            let select = try c.statement("SELECT name, schema FROM collections")
            var rows: [(String, String)] = []
            while try select.step() { rows.append((select.text(0), select.text(1))) }
            return rows
        }
        var result: [String: RecordSchema] = [:]
        for (name, json) in rows { result[name] = try RecordSchema(json: json) }
        return result
    }

    /// `RecordStorage.createCollection`, in one SQLite transaction.
    public func createCollection(_ collection: String, schema: RecordSchema) throws(RecordsError) -> RecordSchema {
        try transaction(write: true) { (c) throws(RecordsError) in
            if let existing = try Self.collections(c)[collection] { return existing }
            try Self.insertCollection(collection, schema: schema, c)
            return schema
        }
    }

    private static func insertCollection(_ collection: String, schema: RecordSchema, _ c: SQLiteConnection) throws(RecordsError) {
        try sql { () throws(SQLiteError) in
            let insert = try c.statement("INSERT INTO collections (name, schema) VALUES (?1, ?2)")
            insert.bind(1, collection)
            insert.bind(2, schema.canonicalJSON)
            try insert.step()
        }
    }

    /// `RecordStorage.importAll`, in one SQLite transaction.
    public func importAll(_ body: (any RecordImportWriter) throws(RecordsError) -> Void) throws(RecordsError) {
        try transaction(write: true) { (c) throws(RecordsError) in try body(ImportWriter(connection: c)) }
    }

    /// Writes into the connection's open transaction.
    private struct ImportWriter: RecordImportWriter {
        let connection: SQLiteConnection

        func addStore(_ storeId: Data, keys: [WrappedStoreKey], currentKeyId: UInt32?) throws(RecordsError) {
            let c = connection
            let metadata = try SQLiteRecordStorage.initialize(StoreMetadata(storeId: storeId, currentKeyId: nil, keys: []), c)
            guard metadata.storeId == storeId else { throw .storeMismatch }
            let existing = Dictionary(uniqueKeysWithValues: metadata.keys.map { ($0.id, $0.wrapped) })
            for key in keys {
                if let stored = existing[key.id] {
                    guard stored == key.wrapped else { throw .storeMismatch }
                } else {
                    try SQLiteRecordStorage.sql { () throws(SQLiteError) in try SQLiteRecordStorage.insertKey(key, c) }
                }
            }
            guard let currentKeyId else { return }
            if metadata.currentKeyId == nil {
                // Writers are serialised: no record without a key can be added after this look.
                let withoutKey = try SQLiteRecordStorage.sql { () throws(SQLiteError) in
                    try c.integer("SELECT EXISTS (SELECT 1 FROM records WHERE keying = 0 AND key_id IS NULL)")
                }
                guard withoutKey == 0 else { throw .importBlockedByRecordsWithoutKey }
            }
            // The current key only moves forward: an export made after a rotation brings the later key.
            if metadata.currentKeyId.map({ $0 < currentKeyId }) ?? true {
                try SQLiteRecordStorage.sql { () throws(SQLiteError) in try SQLiteRecordStorage.setCurrent(currentKeyId, c) }
            }
        }

        func addCollection(_ name: String, schema: RecordSchema) throws(RecordsError) {
            if let present = try SQLiteRecordStorage.collections(connection)[name] {
                guard present == schema else { throw .schemaMismatch(collection: name) }
            } else {
                try SQLiteRecordStorage.insertCollection(name, schema: schema, connection)
            }
        }

        func insert(_ records: [StoredRecord]) throws(RecordsError) {
            try SQLiteRecordStorage.insertRecords(records, connection)
        }
    }
}
