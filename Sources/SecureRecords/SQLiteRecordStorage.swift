import Foundation
import SQLiteSupport
import SecureCore

/// `RecordStorage` in one SQLite file (the system library, through the wrapper SecureKeychain uses):
/// file mode 0600, WAL journal, `synchronous = FULL` (a returned write is durable), `BEGIN IMMEDIATE`
/// write transactions and a busy timeout, so several processes can write one file. The tables
/// (schema version 2) are documented in docs/FORMATS.md ("SecureRecords"); opening a version 1 store
/// migrates it to version 2 in one transaction, and a newer version is refused (`unsupportedSchemaVersion`).
public final class SQLiteRecordStorage: RecordStorage, @unchecked Sendable {
    /// `PRAGMA application_id`: "SFRS".
    static let applicationID: Int64 = 0x5346_5253
    /// The schema version this code writes; version 1 stores are migrated when opened.
    static let schemaVersion: Int64 = 2

    /// The tables of records (schema v2): one `records` row per record holding its clear values,
    /// sealed values and blind-index tokens as field maps (`SQLiteFieldMap`), and one index row per
    /// clear value and per token, keyed for the searches.
    static let recordTables = """
        CREATE TABLE records (
            seq        INTEGER PRIMARY KEY,
            id         BLOB    NOT NULL UNIQUE,
            collection TEXT    NOT NULL,
            keying     INTEGER NOT NULL CHECK (keying IN (0, 1)),
            key_id     INTEGER,
            clear      BLOB    NOT NULL,
            sealed     BLOB    NOT NULL,
            tokens     BLOB    NOT NULL
        );
        CREATE INDEX records_key_id ON records (key_id) WHERE key_id IS NOT NULL;
        CREATE TABLE clear_fields (
            name  TEXT    NOT NULL,
            kind  INTEGER NOT NULL,
            value         NOT NULL,
            seq   INTEGER NOT NULL,
            PRIMARY KEY (name, kind, value, seq)
        ) WITHOUT ROWID;
        CREATE TABLE blind_indexes (
            token  BLOB    NOT NULL,
            name   TEXT    NOT NULL,
            key_id INTEGER NOT NULL,
            seq    INTEGER NOT NULL,
            PRIMARY KEY (token, name, key_id, seq)
        ) WITHOUT ROWID;
        CREATE VIRTUAL TABLE records_fts USING fts5 (body, content = '', columnsize = 0);
        """

    static let schema = """
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (2);
        CREATE TABLE meta (name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
        CREATE TABLE store_keys (id INTEGER PRIMARY KEY, wrapped BLOB NOT NULL);
        CREATE TABLE collections (name TEXT PRIMARY KEY, schema TEXT NOT NULL) WITHOUT ROWID;
        """ + recordTables

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
        .storage(error.description)
    }

    static func sql<R>(_ body: () throws(SQLiteError) -> R) throws(RecordsError) -> R {
        do throws(SQLiteError) {
            return try body()
        } catch {
            throw map(error)
        }
    }

    /// Runs `body` holding the connection inside one transaction.
    private func transaction<R>(write: Bool, _ body: (SQLiteConnection) throws(RecordsError) -> R) throws(RecordsError) -> R {
        try connection.withLock { (c: inout SQLiteConnection) throws(RecordsError) -> R in
            let db = c
            return try db.transaction(write: write, mapError: Self.map) { () throws(RecordsError) -> R in try body(db) }
        }
    }

    private static func migrate(_ c: SQLiteConnection) throws(RecordsError) {
        try c.transaction(write: true, mapError: map) { () throws(RecordsError) in
            let (applicationID, tables) = try sql { () throws(SQLiteError) in
                (try c.integer("PRAGMA application_id"), try c.integer("SELECT count(*) FROM sqlite_schema"))
            }
            if tables == 0, applicationID == 0 {
                try sql { () throws(SQLiteError) in
                    try c.execute("PRAGMA application_id = \(applicationID == 0 ? Self.applicationID : applicationID);\n" + schema)
                }
                return
            }
            guard applicationID == Self.applicationID else { throw .notARecordStore("\(c.path) is another kind of database") }
            let version = try sql { () throws(SQLiteError) in try c.integer("SELECT version FROM schema_version") }
            switch version {
            case Self.schemaVersion: return
            case 1: try migrateFromVersion1(c)
            case ..<1: throw .notARecordStore("unknown schema version \(version)")
            default: throw .unsupportedSchemaVersion(found: version, supported: Self.schemaVersion)
            }
        }
    }

    /// Rewrites a version 1 store as version 2 inside the caller's write transaction: an error or a
    /// crash before COMMIT leaves the version 1 store, which the next open migrates again. Every
    /// record keeps its `seq` (insertion order and full-text row ids); a record the version 1 tables
    /// hold inconsistently fails the migration (`storage`) instead of being dropped.
    private static func migrateFromVersion1(_ c: SQLiteConnection) throws(RecordsError) {
        try sql { () throws(SQLiteError) in
            try c.execute("""
                DROP INDEX records_key_id; DROP INDEX clear_fields_value; DROP INDEX blind_indexes_token; DROP TABLE records_fts;
                ALTER TABLE records RENAME TO v1_records; ALTER TABLE clear_fields RENAME TO v1_clear_fields;
                ALTER TABLE sealed_fields RENAME TO v1_sealed_fields; ALTER TABLE blind_indexes RENAME TO v1_blind_indexes;
                """ + recordTables)
        }
        let writer = try sql { () throws(SQLiteError) in try RowWriter(c) }
        let (head, clear, sealed, index) = try sql { () throws(SQLiteError) in
            (
                try c.statement("SELECT seq, id, collection, keying, key_id FROM v1_records ORDER BY seq"),
                try c.statement("SELECT name, kind, value FROM v1_clear_fields WHERE seq = ?1"),
                try c.statement("SELECT name, sealed FROM v1_sealed_fields WHERE seq = ?1"),
                try c.statement("SELECT name, key_id, token FROM v1_blind_indexes WHERE seq = ?1")
            )
        }
        func refuse(_ seq: Int64, _ reason: String) -> RecordsError {
            .storage("cannot migrate schema version 1 to 2: record row \(seq) \(reason); the store is left at version 1")
        }
        while try sql({ () throws(SQLiteError) in try head.step() }) {
            let seq = head.int64(0)
            guard let id = uuid(head.bytes(1)) else { throw refuse(seq, "has an id that is not 16 bytes") }
            let keying = head.int64(3)
            guard keying == 0 || keying == 1 else { throw refuse(seq, "has an unknown keying") }
            let keyId: UInt32? = head.isNull(4) ? nil : UInt32(exactly: head.int64(4))
            guard head.isNull(4) || keyId != nil, keying == 1 || keyId != nil else { throw refuse(seq, "has no valid key id") }
            var record = StoredRecord(
                id: id, collection: head.text(2), keying: keying == 0 ? .storeKey : .password, keyId: keyId,
                clear: [:], sealed: [:], blindIndexes: [:])
            for statement in [clear, sealed, index] {
                statement.reset()
                statement.bind(1, seq)
            }
            while try sql({ () throws(SQLiteError) in try clear.step() }) {
                switch clear.int64(1) {
                case 1: record.clear[clear.text(0)] = .string(clear.text(2))
                case 2: record.clear[clear.text(0)] = .bytes(clear.blob(2))
                default: throw refuse(seq, "has a clear value of an unknown kind")
                }
            }
            while try sql({ () throws(SQLiteError) in try sealed.step() }) { record.sealed[sealed.text(0)] = sealed.blob(1) }
            while try sql({ () throws(SQLiteError) in try index.step() }) {
                guard index.int64(1) == Int64(keyId ?? 0) else { throw refuse(seq, "has a blind index under another key id") }
                record.blindIndexes[index.text(0)] = index.blob(2)
            }
            do throws(SQLiteError) {
                try writer.write(record, seq: seq)
            } catch {
                throw error.isConstraint ? refuse(seq, "repeats a record id") : map(error)
            }
        }
        try sql { () throws(SQLiteError) in
            head.reset()
            clear.reset()
            sealed.reset()
            index.reset()
            try c.execute("""
                DROP TABLE v1_records; DROP TABLE v1_clear_fields; DROP TABLE v1_sealed_fields; DROP TABLE v1_blind_indexes;
                UPDATE schema_version SET version = 2;
                """)
        }
    }

    /// The UUID of 16 stored bytes.
    private static func uuid(_ bytes: [UInt8]) -> UUID? {
        guard bytes.count == 16 else { return nil }
        return UUID(uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    // MARK: Metadata and keys

    /// `RecordStorage.loadMetadata`, in one SQLite transaction.
    public func loadMetadata() throws(RecordsError) -> StoreMetadata? {
        try transaction(write: false) { (c) throws(RecordsError) in try Self.loadMetadata(c) }
    }

    private static func loadMetadata(_ c: SQLiteConnection) throws(RecordsError) -> StoreMetadata? {
        try sql { () throws(SQLiteError) -> StoreMetadata? in
            let meta = try c.statement("SELECT name, value FROM meta")
            var storeId: Data?
            var current: UInt32?
            while try meta.step() {
                switch meta.text(0) {
                case "storeId": storeId = meta.blob(1)
                case "currentKeyId": current = UInt32(truncatingIfNeeded: meta.int64(1))
                default: break
                }
            }
            guard let storeId else { return nil }
            var keys: [WrappedStoreKey] = []
            let select = try c.statement("SELECT id, wrapped FROM store_keys ORDER BY id")
            while try select.step() {
                keys.append(WrappedStoreKey(id: UInt32(truncatingIfNeeded: select.int64(0)), wrapped: select.blob(1)))
            }
            return StoreMetadata(storeId: storeId, currentKeyId: current, keys: keys)
        }
    }

    /// `RecordStorage.initialize`, in one SQLite transaction.
    public func initialize(_ metadata: StoreMetadata) throws(RecordsError) -> StoreMetadata {
        try transaction(write: true) { (c) throws(RecordsError) in
            if let existing = try Self.loadMetadata(c) { return existing }
            try Self.sql { () throws(SQLiteError) in
                let insert = try c.statement("INSERT INTO meta (name, value) VALUES (?1, ?2)")
                insert.bind(1, "storeId")
                insert.bind(2, metadata.storeId)
                try insert.step()
                if let current = metadata.currentKeyId { try Self.setCurrent(current, c) }
                for key in metadata.keys { try Self.insertKey(key, c) }
            }
            return metadata
        }
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

    // MARK: Records

    private static func seq(of id: UUID, _ c: SQLiteConnection) throws(SQLiteError) -> Int64? {
        let select = try c.statement("SELECT seq FROM records WHERE id = ?1")
        select.bind(1, RecordContext.bytes(of: id))
        guard try select.step() else { return nil }
        let seq = select.int64(0)
        select.reset()
        return seq
    }

    /// The prepared inserts of one record's rows, fetched once per batch.
    private struct RowWriter {
        let record, clear, index, fts: SQLiteStatement
        let connection: SQLiteConnection

        init(_ c: SQLiteConnection) throws(SQLiteError) {
            connection = c
            record = try c.statement(
                "INSERT INTO records (seq, id, collection, keying, key_id, clear, sealed, tokens) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
            clear = try c.statement("INSERT INTO clear_fields (name, kind, value, seq) VALUES (?1, ?2, ?3, ?4)")
            index = try c.statement("INSERT INTO blind_indexes (token, name, key_id, seq) VALUES (?1, ?2, ?3, ?4)")
            fts = try c.statement("INSERT INTO records_fts (rowid, body) VALUES (?1, ?2)")
        }

        /// Writes the rows of `stored` under `seq` (a new one when nil; no rows may exist for it).
        func write(_ stored: StoredRecord, seq: Int64?) throws(SQLiteError) {
            record.reset()
            if let seq { record.bind(1, seq) }
            record.bind(2, RecordContext.bytes(of: stored.id))
            record.bind(3, stored.collection)
            record.bind(4, Int64(stored.keying == .storeKey ? 0 : 1))
            if let keyId = stored.keyId { record.bind(5, Int64(keyId)) }
            record.bind(6, SQLiteFieldMap.encode(clear: stored.clear))
            record.bind(7, SQLiteFieldMap.encode(stored.sealed))
            record.bind(8, SQLiteFieldMap.encode(stored.blindIndexes))
            try record.step()
            let rowSeq = seq ?? connection.lastInsertRowID
            try SQLiteRecordStorage.stepSearchRows(of: stored, seq: rowSeq, clear: clear, index: index)
            let fullText = stored.fullText
            if !fullText.isEmpty {
                fts.reset()
                fts.bind(1, rowSeq)
                fts.bind(2, fullText)
                try fts.step()
            }
        }
    }

    /// Runs `clear` once per clear value of `stored` bound as (name, kind, value, seq), and `index`
    /// once per blind-index token bound as (token, name, key_id, seq): the key columns of the two
    /// search tables, in the same order for inserting and for deleting.
    private static func stepSearchRows(
        of stored: StoredRecord, seq: Int64, clear: SQLiteStatement, index: SQLiteStatement
    ) throws(SQLiteError) {
        for (name, value) in stored.clear {
            clear.reset()
            clear.bind(1, name)
            clear.bind(2, Int64(value.kindByte))
            switch value {
            case .string(let s): clear.bind(3, s)
            case .bytes(let b): clear.bind(3, b)
            }
            clear.bind(4, seq)
            try clear.step()
        }
        for (name, token) in stored.blindIndexes {
            index.reset()
            index.bind(1, token)
            index.bind(2, name)
            index.bind(3, Int64(stored.keyId ?? 0))
            index.bind(4, seq)
            try index.step()
        }
    }

    /// Deletes the rows of `stored`, stored under `seq`: its index rows by their keys, its full-text
    /// entry by the FTS5 `delete` command with the body it was indexed with (the table keeps no
    /// content), then its `records` row.
    private static func deleteRows(_ stored: StoredRecord, seq: Int64, _ c: SQLiteConnection) throws(SQLiteError) {
        try stepSearchRows(
            of: stored, seq: seq,
            clear: c.statement("DELETE FROM clear_fields WHERE name = ?1 AND kind = ?2 AND value = ?3 AND seq = ?4"),
            index: c.statement("DELETE FROM blind_indexes WHERE token = ?1 AND name = ?2 AND key_id = ?3 AND seq = ?4"))
        let fullText = stored.fullText
        if !fullText.isEmpty {
            let fts = try c.statement("INSERT INTO records_fts (records_fts, rowid, body) VALUES ('delete', ?1, ?2)")
            fts.bind(1, seq)
            fts.bind(2, fullText)
            try fts.step()
        }
        let record = try c.statement("DELETE FROM records WHERE seq = ?1")
        record.bind(1, seq)
        try record.step()
    }

    private static func insertRecords(_ records: [StoredRecord], _ c: SQLiteConnection) throws(RecordsError) {
        let writer = try sql { () throws(SQLiteError) in try RowWriter(c) }
        for record in records {
            do throws(SQLiteError) {
                try writer.write(record, seq: nil)
            } catch {
                // The only uniqueness constraint a new record can break is its id's.
                if error.isConstraint { throw .duplicateRecord(record.id) }
                throw map(error)
            }
        }
    }

    /// `RecordStorage.insert`, in one SQLite transaction.
    public func insert(_ records: [StoredRecord]) throws(RecordsError) {
        try transaction(write: true) { (c) throws(RecordsError) in try Self.insertRecords(records, c) }
    }

    /// `RecordStorage.insert(batchesFrom:)`, in one SQLite transaction: each batch is written as it
    /// arrives, while the caller prepares the next.
    public func insert(batchesFrom next: () throws(RecordsError) -> [StoredRecord]?) throws(RecordsError) {
        try transaction(write: true) { (c) throws(RecordsError) in
            while let batch = try next() { try Self.insertRecords(batch, c) }
        }
    }

    /// `RecordStorage.replace`, in one SQLite transaction.
    public func replace(_ records: [StoredRecord]) throws(RecordsError) {
        try transaction(write: true) { (c) throws(RecordsError) in
            for record in records {
                guard let seq = try Self.sql({ () throws(SQLiteError) in try Self.seq(of: record.id, c) }),
                    let old = try Self.load(seqs: [seq], c).first
                else {
                    throw .recordNotFound(record.id)
                }
                try Self.sql { () throws(SQLiteError) in
                    try Self.deleteRows(old, seq: seq, c)
                    try RowWriter(c).write(record, seq: seq)
                }
            }
        }
    }

    /// `RecordStorage.delete`, in one SQLite transaction.
    public func delete(_ id: UUID) throws(RecordsError) -> Bool {
        try transaction(write: true) { (c) throws(RecordsError) in
            guard let seq = try Self.sql({ () throws(SQLiteError) in try Self.seq(of: id, c) }),
                let old = try Self.load(seqs: [seq], c).first
            else { return false }
            try Self.sql { () throws(SQLiteError) in try Self.deleteRows(old, seq: seq, c) }
            return true
        }
    }

    /// `RecordStorage.record`, in one SQLite transaction.
    public func record(_ id: UUID) throws(RecordsError) -> StoredRecord? {
        try transaction(write: false) { (c) throws(RecordsError) in
            guard let seq = try Self.sql({ () throws(SQLiteError) in try Self.seq(of: id, c) }) else { return nil }
            return try Self.load(seqs: [seq], c).first
        }
    }

    /// Loads the records with these sequence numbers, in the given order (missing ones are left
    /// out). A row whose id or field maps are malformed throws `storage`.
    private static func load(seqs: [Int64], _ c: SQLiteConnection) throws(RecordsError) -> [StoredRecord] {
        var result: [StoredRecord] = []
        result.reserveCapacity(seqs.count)
        let head = try sql { () throws(SQLiteError) in
            try c.statement("SELECT id, collection, keying, key_id, clear, sealed, tokens FROM records WHERE seq = ?1")
        }
        for seq in seqs {
            head.reset()
            head.bind(1, seq)
            guard try sql({ () throws(SQLiteError) in try head.step() }) else { continue }
            defer { head.reset() }
            func malformed(_ reason: String) -> RecordsError { .storage("record row \(seq) is malformed: \(reason)") }
            guard let id = uuid(head.bytes(0)) else { throw malformed("its id is not 16 bytes") }
            let clear: [String: FieldValue], sealed: [String: Data], tokens: [String: Data]
            do throws(SQLiteFieldMap.Malformed) {
                (clear, sealed, tokens) = try SQLiteFieldMap.decodeRow(clear: head.bytes(4), sealed: head.bytes(5), tokens: head.bytes(6))
            } catch {
                throw malformed(error.description)
            }
            result.append(StoredRecord(
                id: id, collection: head.text(1), keying: head.int64(2) == 0 ? .storeKey : .password,
                keyId: head.isNull(3) ? nil : UInt32(truncatingIfNeeded: head.int64(3)), clear: clear, sealed: sealed, blindIndexes: tokens))
        }
        return result
    }

    /// `RecordStorage.search`, in one SQLite transaction.
    public func search(_ query: StorageQuery) throws(RecordsError) -> [StoredRecord] {
        // Names in every spelling a store written by an earlier version may hold (`RecordNames`).
        func names(_ name: String, _ binds: inout [(SQLiteStatement, Int32) -> Void]) -> String {
            let spellings = RecordNames.spellings(of: name)
            for spelling in spellings { binds.append { $0.bind($1, spelling) } }
            return "(" + spellings.map { _ in "?" }.joined(separator: ", ") + ")"
        }
        var binds: [(SQLiteStatement, Int32) -> Void] = []
        var sql = "SELECT seq FROM records WHERE collection IN " + names(query.collection, &binds)
        for (field, value) in query.equals {
            sql += " AND seq IN (SELECT seq FROM clear_fields WHERE name IN " + names(field, &binds) + " AND value = ? AND kind = ?)"
            switch value {
            case .string(let s): binds.append { $0.bind($1, s) }
            case .bytes(let b): binds.append { $0.bind($1, b) }
            }
            binds.append { $0.bind($1, Int64(value.kindByte)) }
        }
        for (field, prefix) in query.prefixes {
            sql += " AND seq IN (SELECT seq FROM clear_fields WHERE name IN " + names(field, &binds) + " AND kind = 1 AND value >= ?"
                + " AND substr(value, 1, length(?)) = ?)"
            for _ in 0..<3 { binds.append { $0.bind($1, prefix) } }
        }
        for (field, tokens) in query.blindIndexes {
            guard !tokens.isEmpty else { return [] }
            let alternatives = tokens.map { _ in "SELECT seq FROM blind_indexes WHERE token = ? AND name = ? AND key_id = ?" }
            sql += " AND seq IN (" + alternatives.joined(separator: " UNION ALL ") + ")"
            for token in tokens {
                binds.append { $0.bind($1, token.token) }
                binds.append { $0.bind($1, field) }
                binds.append { $0.bind($1, Int64(token.keyId)) }
            }
        }
        if let fullText = query.fullText {
            try FullTextQueryLimits.check(fullText)
            sql += " AND seq IN (SELECT rowid FROM records_fts WHERE records_fts MATCH ?)"
            binds.append { $0.bind($1, fullText) }
        }
        sql += " ORDER BY seq"
        let statementSQL = sql
        return try transaction(write: false) { (c) throws(RecordsError) in
            var seqs: [Int64] = []
            do throws(SQLiteError) {
                let select = try c.statement(statementSQL)
                for (i, bind) in binds.enumerated() { bind(select, Int32(i + 1)) }
                while try select.step() { seqs.append(select.int64(0)) }
            } catch {
                if query.fullText != nil, error.code & 0xFF == 1 /* SQLITE_ERROR: FTS5 syntax */ {
                    throw .invalidQuery("full-text query: \(error.message)")
                }
                throw Self.map(error)
            }
            return try Self.load(seqs: seqs, c)
        }
    }

    /// `RecordStorage.records`, in one SQLite transaction.
    public func records(withKeyIdOtherThan keyId: UInt32, limit: Int) throws(RecordsError) -> [StoredRecord] {
        try transaction(write: false) { (c) throws(RecordsError) in
            let seqs = try Self.sql { () throws(SQLiteError) -> [Int64] in
                let select = try c.statement("SELECT seq FROM records WHERE key_id IS NOT NULL AND key_id != ?1 ORDER BY seq LIMIT ?2")
                select.bind(1, Int64(keyId))
                select.bind(2, Int64(limit))
                var seqs: [Int64] = []
                while try select.step() { seqs.append(select.int64(0)) }
                return seqs
            }
            return try Self.load(seqs: seqs, c)
        }
    }

    /// `RecordStorage.allRecords`, in one SQLite transaction.
    public func allRecords(offset: Int, limit: Int) throws(RecordsError) -> [StoredRecord] {
        try transaction(write: false) { (c) throws(RecordsError) in
            let seqs = try Self.sql { () throws(SQLiteError) -> [Int64] in
                let select = try c.statement("SELECT seq FROM records ORDER BY seq LIMIT ?1 OFFSET ?2")
                select.bind(1, Int64(limit))
                select.bind(2, Int64(offset))
                var seqs: [Int64] = []
                while try select.step() { seqs.append(select.int64(0)) }
                return seqs
            }
            return try Self.load(seqs: seqs, c)
        }
    }

    /// `RecordStorage.importAll`, in one SQLite transaction.
    public func importAll(
        keys: [WrappedStoreKey], currentKeyId: UInt32?, collections: [String: RecordSchema], records: [StoredRecord]
    ) throws(RecordsError) {
        try transaction(write: true) { (c) throws(RecordsError) in
            let metadata = try Self.loadMetadata(c)
            let existing = Dictionary(uniqueKeysWithValues: (metadata?.keys ?? []).map { ($0.id, $0.wrapped) })
            for key in keys {
                if let stored = existing[key.id] {
                    guard stored == key.wrapped else { throw .storeMismatch }
                } else {
                    try Self.sql { () throws(SQLiteError) in try Self.insertKey(key, c) }
                }
            }
            if metadata?.currentKeyId == nil, let currentKeyId {
                try Self.sql { () throws(SQLiteError) in try Self.setCurrent(currentKeyId, c) }
            }
            let stored = try Self.collections(c)
            for (name, schema) in collections {
                if let present = stored[name] {
                    guard present == schema else { throw .schemaMismatch(collection: name) }
                } else {
                    try Self.insertCollection(name, schema: schema, c)
                }
            }
            try Self.insertRecords(records, c)
        }
    }
}
