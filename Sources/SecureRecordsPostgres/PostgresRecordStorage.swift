import Foundation
import NIOCore
import PostgresNIO
import SecureCore
import SecureRecords

/// `RecordStorage` in a PostgreSQL database, for a store shared by many machines and users.
///
/// The server only ever receives what `RecordStore` hands a backend: clear fields, sealed values
/// (`SFE1` envelopes), blind-index tokens, wrapped store keys and the token positions of clear
/// text for full-text search. The tables (docs/FORMATS.md, "SecureRecords on PostgreSQL") are
/// created on first use, under an advisory lock so that clients starting together create them once,
/// and their format version is checked on every open.
///
/// Every method is one transaction (`BEGIN` ... `COMMIT`, rolled back on any error). Clients in
/// this and other processes may write at once and lose nothing: ids and names are unique keys,
/// first-writer races (store initialisation, key ids, collections, import) are settled by
/// `INSERT ... ON CONFLICT DO NOTHING` followed by reading what is stored, updates and deletes take
/// the record row's lock before touching its fields, and serialization failures or deadlocks are
/// retried. Reads run at REPEATABLE READ, so a record is never seen half-replaced.
///
/// Threading: synchronous, over postgres-nio's `EventLoopFuture` API waited on with `wait()`; the
/// I/O runs on SwiftNIO's event-loop threads, not Swift concurrency's cooperative pool, so calling
/// from a task cannot deadlock the pool (it only blocks the calling thread). Each call's transaction
/// leases one of the instance's pooled connections (`Configuration.maximumConnections`, default 8),
/// so one instance serves that many threads at once; from async code, `RecordStore.async` runs the
/// calls on threads of its own. Do not call from a SwiftNIO event-loop thread. A connection the server dropped while idle is replaced at the
/// next call; a failure inside a transaction is reported (`RecordsError.storage`), never retried
/// after `COMMIT` was sent.
public final class PostgresRecordStorage: RecordStorage, Sendable {
    /// The format name stored in the `format` table.
    public static let formatName = "SFRS"
    /// The table format version this code writes and reads; version 1 and 2 stores are migrated to
    /// it when opened (docs/FORMATS.md).
    public static let schemaVersion: Int32 = 3

    /// The configuration the storage was opened with.
    public let configuration: Configuration
    let session: PostgresSession
    let tables: Tables

    /// Connects, creating the tables when the schema holds none and `creatingTables` (else a
    /// mistyped schema or prefix would get an empty store: a tool that only reads passes false).
    /// Throws `RecordsError.storage` when the server cannot be reached or refuses the login,
    /// `notARecordStore` when the tables exist but belong to something else or to a newer format,
    /// or are missing and not to be created.
    public init(configuration: Configuration, creatingTables: Bool = true) throws(RecordsError) {
        try configuration.validate()
        self.configuration = configuration
        session = PostgresSession(configuration)
        tables = Tables(schema: configuration.schema, prefix: configuration.tablePrefix)
        try migrate(creatingTables: creatingTables)
    }

    /// `RecordStorage.concurrentCalls`: the pool's connections (`Configuration.maximumConnections`),
    /// so `RecordStore.async` calls beyond them wait in its queue, not for a connection's deadline.
    public var concurrentCalls: Int { configuration.maximumConnections }

    /// Closes the idle connections now (they are also closed when the storage is released; a later
    /// call reconnects).
    public func close() { session.close() }

    /// Runs `sql` (one statement, no parameters) in its own transaction. For tests and
    /// administration; the table names are in `tableName(_:)`.
    package func execute(_ sql: String) throws(RecordsError) {
        try session.transaction(readOnly: false) { (tx) throws(RecordsError) in
            do throws(PostgresSession.PostgresFailure) { try tx.query(sql) } catch { throw tx.map(error) }
        }
    }

    /// Runs `sql` (one statement, no parameters) in its own read-only transaction and returns the
    /// first column of each row as text (NULL as nil). For tests and administration.
    package func queryText(_ sql: String) throws(RecordsError) -> [String?] {
        try read { (tx) throws(RecordsError) in
            var result: [String?] = []
            for row in try run(tx, sql) { result.append(try decode(row, String?.self)) }
            return result
        }
    }

    /// The qualified, quoted name of the store's table `name` (`records`, `clear_fields`, ...).
    package func tableName(_ name: String) -> String { tables.name(name) }

    // MARK: Helpers

    typealias Transaction = PostgresSession.Transaction

    func write<R>(_ body: (Transaction) throws(RecordsError) -> R) throws(RecordsError) -> R {
        try session.transaction(readOnly: false, body)
    }

    func read<R>(_ body: (Transaction) throws(RecordsError) -> R) throws(RecordsError) -> R {
        try session.transaction(readOnly: true, body)
    }

    static func buffer(_ data: Data) -> ByteBuffer { ByteBuffer(bytes: data) }
    static func data(_ buffer: ByteBuffer) -> Data { Data(buffer.readableBytesView) }

    func decode<each Column: PostgresDecodable>(
        _ row: PostgresRow, _ type: (repeat each Column).Type
    ) throws(RecordsError) -> (repeat each Column) {
        do {
            return try row.decodeChecked(type)
        } catch {
            throw .storage(StorageFailure(.malformedStorage, "\(configuration.displayName): unexpected column type: \(error)"))
        }
    }

    /// Runs one statement inside `tx`, mapping failures.
    @discardableResult
    func run(_ tx: Transaction, _ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws(RecordsError) -> [PostgresRow] {
        do throws(PostgresSession.PostgresFailure) {
            return try tx.query(sql, binds)
        } catch {
            throw tx.map(error)
        }
    }

    static func binds(_ build: (inout PostgresBindings) -> Void) -> PostgresBindings {
        var binds = PostgresBindings()
        build(&binds)
        return binds
    }

    // MARK: Metadata and keys

    /// `RecordStorage.loadMetadata`, in one transaction.
    public func loadMetadata() throws(RecordsError) -> StoreMetadata? {
        try read { (tx) throws(RecordsError) in try loadMetadata(tx) }
    }

    /// The metadata, read in `tx` (the statements sent at once); with `holding`, the store's keys
    /// are held until `tx` ends (`metadataStatements(holding:)`).
    func loadMetadata(_ tx: Transaction, holding: Bool = false) throws(RecordsError) -> StoreMetadata? {
        let results: [[PostgresRow]]
        do throws(PostgresSession.PostgresFailure) {
            results = try tx.pipeline(metadataStatements(holding: holding))
        } catch {
            throw tx.map(error)
        }
        return try decodeMetadata(results[results.count - 2], results[results.count - 1])
    }

    /// `accepts(_:_:_:)` on `loadMetadata(_:holding:)`.
    func accepts(_ accept: (StoreMetadata?) throws(RecordsError) -> Bool, _ tx: Transaction, holding: Bool) throws(RecordsError) -> Bool {
        try accepts(accept, try loadMetadata(tx, holding: holding), tx)
    }

    /// `accept`'s verdict on `metadata`, or its error, after which the transaction is not run again:
    /// a check's error is final, not retried for a failure a statement sent with the check met
    /// meanwhile (a deadlock, say).
    func accepts(_ accept: (StoreMetadata?) throws(RecordsError) -> Bool, _ metadata: StoreMetadata?, _ tx: Transaction) throws(RecordsError) -> Bool {
        do throws(RecordsError) {
            return try accept(metadata)
        } catch {
            tx.failures.abandon()
            throw error
        }
    }

    /// The statements reading the metadata: the store row, then its keys (the last two). With
    /// `holding`, they follow `keysLock(exclusive: false)`: a write checked against the store's
    /// keys holds them until it commits.
    func metadataStatements(holding: Bool = false) -> [(String, PostgresBindings)] {
        (holding ? [keysLock(exclusive: false)] : []) + [
            ("SELECT store_id, current_key_id FROM \(tables.store)", PostgresBindings()),
            ("SELECT id, wrapped FROM \(tables.storeKeys) ORDER BY id", PostgresBindings()),
        ]
    }

    /// The statement that holds the store's current key for the rest of the transaction: a
    /// transaction-level advisory lock on the store, shared by the writes checked against the keys,
    /// exclusive for a switch to a new current key (`addKey(_:makeCurrent: true)`). So a switch
    /// waits for the checked writes in flight, and the writes that come after it wait for its
    /// commit and then read its key (at READ COMMITTED each statement reads what was committed
    /// before it started). PostgreSQL's lock manager queues a shared request behind a waiting
    /// exclusive one, so a stream of writes never starves a switch; and no row is written to take
    /// it (unlike `SELECT ... FOR SHARE`, which writes a lock into the row and, with concurrent
    /// holders, a new multixact each time). The lock's key is the first 8 bytes of the random
    /// store id, read in the same statement: a role that cannot read the store table cannot learn
    /// it to hold the lock and stall the store's writers (no lock when there is no store row yet).
    func keysLock(exclusive: Bool) -> (String, PostgresBindings) {
        (
            """
            SELECT pg_advisory_xact_lock\(exclusive ? "" : "_shared")(k)
            FROM (SELECT ('x' || encode(substring(store_id FROM 1 FOR 8), 'hex'))::bit(64)::bigint AS k FROM \(tables.store)) AS s
            """,
            PostgresBindings()
        )
    }

    /// The metadata in the rows of `metadataStatements`.
    func decodeMetadata(_ store: [PostgresRow], _ storeKeys: [PostgresRow]) throws(RecordsError) -> StoreMetadata? {
        guard let row = store.first else { return nil }
        let (storeId, current) = try decode(row, (ByteBuffer, Int64?).self)
        var keys: [WrappedStoreKey] = []
        for key in storeKeys {
            let (id, wrapped) = try decode(key, (Int64, ByteBuffer).self)
            keys.append(WrappedStoreKey(id: try WrappedStoreKey.id(stored: id, in: "\(configuration.displayName): a store key row"), wrapped: Self.data(wrapped)))
        }
        let currentKeyId = try current.map { (id) throws(RecordsError) in
            try WrappedStoreKey.id(stored: id, in: "\(configuration.displayName): the current key")
        }
        return StoreMetadata(storeId: Self.data(storeId), currentKeyId: currentKeyId, keys: keys)
    }

    /// `RecordStorage.initialize`, in one transaction: the first client's metadata wins.
    public func initialize(_ metadata: StoreMetadata) throws(RecordsError) -> StoreMetadata {
        try write { (tx) throws(RecordsError) in try initialize(metadata, tx) }
    }

    /// `initialize`, in `tx`.
    private func initialize(_ metadata: StoreMetadata, _ tx: Transaction) throws(RecordsError) -> StoreMetadata {
        let inserted = try run(
            tx, "INSERT INTO \(tables.store) (singleton, store_id, current_key_id) VALUES (true, $1, $2) ON CONFLICT (singleton) DO NOTHING RETURNING 1",
            Self.binds {
                $0.append(Self.buffer(metadata.storeId))
                $0.append(metadata.currentKeyId.map { Int64($0) })
            })
        guard !inserted.isEmpty else {
            guard let existing = try loadMetadata(tx) else { throw .storage(StorageFailure(.malformedStorage, "\(configuration.displayName): the store row vanished")) }
            return existing
        }
        for key in metadata.keys { _ = try insertKey(key, tx) }
        return metadata
    }

    /// Inserts a key unless its id exists; true when inserted.
    func insertKey(_ key: WrappedStoreKey, _ tx: Transaction) throws(RecordsError) -> Bool {
        !(try run(
            tx, "INSERT INTO \(tables.storeKeys) (id, wrapped) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING 1",
            Self.binds {
                $0.append(Int64(key.id))
                $0.append(Self.buffer(key.wrapped))
            })).isEmpty
    }

    /// `RecordStorage.rewrapKeys`, in one transaction.
    public func rewrapKeys(_ keys: [WrappedStoreKey]) throws(RecordsError) {
        try write { (tx) throws(RecordsError) in
            for key in keys {
                let updated = try run(
                    tx, "UPDATE \(tables.storeKeys) SET wrapped = $2 WHERE id = $1 RETURNING 1",
                    Self.binds {
                        $0.append(Int64(key.id))
                        $0.append(Self.buffer(key.wrapped))
                    })
                guard !updated.isEmpty else { throw .storeKeyUnavailable("store key \(key.id) is not in the store") }
            }
        }
    }

    /// `RecordStorage.addKey`, in one transaction.
    public func addKey(_ key: WrappedStoreKey, makeCurrent: Bool) throws(RecordsError) -> Bool {
        try write { (tx) throws(RecordsError) in
            guard try insertKey(key, tx) else { return false }
            if makeCurrent {
                // The store row first, then the keys' lock: a wait for the row (an import that set
                // the first key and has not committed) does not hold up the checked writes.
                try run(tx, "SELECT 1 FROM \(tables.store) FOR NO KEY UPDATE")
                let (lock, binds) = keysLock(exclusive: true)
                try run(tx, lock, binds)
                try run(tx, "UPDATE \(tables.store) SET current_key_id = $1", Self.binds { $0.append(Int64(key.id)) })
            }
            return true
        }
    }

    // MARK: Collections

    /// `RecordStorage.collections`, in one transaction.
    public func collections() throws(RecordsError) -> [String: RecordSchema] {
        try read { (tx) throws(RecordsError) in try collections(tx) }
    }

    func collections(_ tx: Transaction) throws(RecordsError) -> [String: RecordSchema] {
        var result: [String: RecordSchema] = [:]
        for row in try run(tx, "SELECT name, schema FROM \(tables.collections)") {
            let (name, json) = try decode(row, (String, String).self)
            result[name] = try Self.schema(json: json)
        }
        return result
    }

    static func schema(json: String) throws(RecordsError) -> RecordSchema {
        let decoded: RecordSchema
        do {
            decoded = try JSONDecoder().decode(RecordSchema.self, from: Data(json.utf8))
        } catch {
            throw .invalidSchema("stored schema is not valid JSON of the expected shape")
        }
        return try RecordSchema(decoded.fields)
    }

    /// The canonical JSON of a schema (sorted keys), as the SQLite store keeps it.
    static func json(_ schema: RecordSchema) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(schema)) ?? Data(), as: UTF8.self)
    }

    /// Inserts the collection unless it exists; returns the stored schema.
    func createCollection(_ collection: String, schema: RecordSchema, _ tx: Transaction) throws(RecordsError) -> RecordSchema {
        try run(
            tx, "INSERT INTO \(tables.collections) (name, schema) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
            Self.binds {
                $0.append(collection)
                $0.append(Self.json(schema))
            })
        guard let row = try run(tx, "SELECT schema FROM \(tables.collections) WHERE name = $1", Self.binds { $0.append(collection) }).first else {
            throw .storage(StorageFailure(.malformedStorage, "\(configuration.displayName): collection '\(collection)' vanished"))
        }
        return try Self.schema(json: try decode(row, String.self))
    }

    /// `RecordStorage.createCollection`, in one transaction.
    public func createCollection(_ collection: String, schema: RecordSchema) throws(RecordsError) -> RecordSchema {
        try write { (tx) throws(RecordsError) in try createCollection(collection, schema: schema, tx) }
    }

    // MARK: Import

    /// `RecordStorage.importAll`, in one transaction (run again from the start after a lost
    /// connection, as every write is), whose deadline is renewed by each batch inserted: an import
    /// of any size runs to its end while the server keeps answering. After a restart that leaves
    /// its commit in doubt, its first record settles it: an import stores all its records or
    /// none, and refuses ids that exist (one without records runs again: its keys and collections
    /// are taken again as they are).
    public func importAll(_ body: (any RecordImportWriter) throws(RecordsError) -> Void) throws(RecordsError) {
        let counts = Locked(ImportCounts())
        let wasCommitted = { (tx: Transaction) throws(RecordsError) -> Bool in
            guard let first = counts.withLock({ $0.first }) else { return false }
            return try self.allStored([first], tx)
        }
        try session.transaction(readOnly: false, bulk: true, wasCommitted: wasCommitted) { (tx) throws(RecordsError) in
            counts.withLock { $0 = ImportCounts() }  // the body runs again after a lost connection
            try body(ImportWriter(storage: self, transaction: tx, counts: counts))
            let imported = counts.withLock { $0 }
            if imported.movedCurrentKey {
                // As a key switch (`addKey(_:makeCurrent: true)`): the keys' lock, exclusively,
                // waits for the checked writes in flight and holds later ones until the commit;
                // taken here rather than when the key moved, which would hold every writer for the
                // whole import.
                let (lock, binds) = keysLock(exclusive: true)
                try run(tx, lock, binds)
            }
            guard imported.madeFirstKey else { return }
            // Checked writes that saw no key (a locked client's clear-only add) may have added
            // records without one meanwhile: the store's lock, taken exclusively as a key switch
            // takes it (not at the first key, which would hold every writer for the whole
            // import), waits for those in flight and holds later ones until the commit; then any
            // such record beyond the export's own (a first unlock cut short leaves some in a
            // store with a key) refuses the import.
            let withoutKey = "SELECT count(*) FROM \(tables.records) WHERE keying = 0 AND key_id IS NULL"
            let rows: [[PostgresRow]]
            do throws(PostgresSession.PostgresFailure) {
                rows = try tx.pipeline([keysLock(exclusive: true), (withoutKey, PostgresBindings())])
            } catch {
                throw tx.map(error)
            }
            guard let row = rows[1].first, try decode(row, Int64.self) == imported.withoutKey else { throw .importBlockedByRecordsWithoutKey }
        }
        analyze(afterLoading: counts.withLock { $0.records })
    }

    /// What an import wrote.
    private struct ImportCounts {
        var records = 0
        /// The first record.
        var first: StoredRecord?
        /// Store-keyed records without a key among them.
        var withoutKey: Int64 = 0
        /// Whether it gave the store its first current key.
        var madeFirstKey = false
        /// Whether it moved the store's current key forward (to the export's later one).
        var movedCurrentKey = false
    }

    /// Writes into the transaction `transaction`, counting the records in `inserted`.
    private struct ImportWriter: RecordImportWriter {
        let storage: PostgresRecordStorage
        let transaction: Transaction
        let counts: Locked<ImportCounts>

        func addStore(_ storeId: Data, keys: [WrappedStoreKey], currentKeyId: UInt32?) throws(RecordsError) {
            let (s, tx) = (storage, transaction)
            guard try s.initialize(StoreMetadata(storeId: storeId, currentKeyId: nil, keys: []), tx).storeId == storeId else { throw .storeMismatch }
            for key in keys where !(try s.insertKey(key, tx)) {
                let row = try s.run(tx, "SELECT wrapped FROM \(s.tables.storeKeys) WHERE id = $1", PostgresRecordStorage.binds { $0.append(Int64(key.id)) }).first
                guard let row, PostgresRecordStorage.data(try s.decode(row, ByteBuffer.self)) == key.wrapped else { throw .storeMismatch }
            }
            guard let currentKeyId else { return }
            let binds = PostgresRecordStorage.binds { $0.append(Int64(currentKeyId)) }
            let updated = try s.run(tx, "UPDATE \(s.tables.store) SET current_key_id = $1 WHERE current_key_id IS NULL RETURNING 1", binds)
            if !updated.isEmpty {
                counts.withLock { $0.madeFirstKey = true }
                return
            }
            // The current key only moves forward: an export made after a rotation brings the later
            // key (the switch takes the keys' lock at the end of the import).
            let moved = try s.run(tx, "UPDATE \(s.tables.store) SET current_key_id = $1 WHERE current_key_id < $1 RETURNING 1", binds)
            if !moved.isEmpty { counts.withLock { $0.movedCurrentKey = true } }
        }

        func addCollection(_ name: String, schema: RecordSchema) throws(RecordsError) {
            guard try storage.createCollection(name, schema: schema, transaction) == schema else { throw .schemaMismatch(collection: name) }
        }

        func insert(_ records: [StoredRecord]) throws(RecordsError) {
            try storage.copyRecords(records, transaction)
            let withoutKey = Int64(records.count { $0.keying == .storeKey && $0.keyId == nil })
            counts.withLock {
                if $0.first == nil { $0.first = records.first }
                $0.records += records.count
                $0.withoutKey += withoutKey
            }
        }
    }
}
