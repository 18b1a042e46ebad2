import Foundation
import SQLiteSupport
import SecureCore

// The tables of a SQLite record store (docs/FORMATS.md, "SecureRecords") and the migration of
// older schema versions, run when a store is opened.
extension SQLiteRecordStorage {
    /// `PRAGMA application_id`: "SFRS".
    static let applicationID: Int64 = 0x5346_5253
    /// The schema version this code writes; version 1, 2 and 3 stores are migrated when opened.
    static let schemaVersion: Int64 = 4

    /// The tables of records (schema v4): one `records` row per record holding its clear values,
    /// sealed values and blind-index tokens as field maps (`FieldMap`), its full-text terms
    /// (`fullTextBody`) and its authentication (`mac`), one index row per clear value and per token,
    /// keyed for the searches, and the full-text index of the terms (FTS5's `ascii` tokenizer splits
    /// them back unchanged).
    static let recordTables = """
        CREATE TABLE records (
            seq        INTEGER PRIMARY KEY,
            id         BLOB    NOT NULL UNIQUE,
            collection TEXT    NOT NULL,
            keying     INTEGER NOT NULL CHECK (keying IN (0, 1)),
            key_id     INTEGER,
            clear      BLOB    NOT NULL,
            sealed     BLOB    NOT NULL,
            tokens     BLOB    NOT NULL,
            fts        TEXT    NOT NULL,
            mac        BLOB
        );
        CREATE INDEX records_key_id ON records (key_id) WHERE key_id IS NOT NULL;
        CREATE INDEX records_unkeyed ON records (seq) WHERE key_id IS NULL AND keying = 0;
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
        CREATE VIRTUAL TABLE records_fts USING fts5 (body, content = '', columnsize = 0, tokenize = 'ascii');
        """

    static let schema = """
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (4);
        CREATE TABLE meta (name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
        CREATE TABLE store_keys (id INTEGER PRIMARY KEY, wrapped BLOB NOT NULL);
        CREATE TABLE collections (name TEXT PRIMARY KEY, schema TEXT NOT NULL) WITHOUT ROWID;
        """ + recordTables

    static func migrate(_ c: SQLiteConnection) throws(RecordsError) {
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
            case 2:
                try migrateFromVersion2(c)
                try migrateFromVersion3(c)
            case 3: try migrateFromVersion3(c)
            case ..<1: throw .notARecordStore("unknown schema version \(version)")
            default: throw .unsupportedSchemaVersion(found: version, supported: Self.schemaVersion)
            }
        }
    }

    /// Rewrites a version 1 store as version 4 inside the caller's write transaction: an error or a
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
            .storage(StorageFailure(
                .malformedStorage, "cannot migrate schema version 1: record row \(seq) \(reason); the store is left at version 1"))
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
                UPDATE schema_version SET version = \(schemaVersion);
                """)
        }
    }

    /// Re-indexes a version 2 store's full text as version 3 inside the caller's write transaction:
    /// each record's terms (`FullText`) go into the new `fts` column and a new FTS5 table, in place
    /// of the text FTS5's `unicode61` tokenizer split (which PostgreSQL could not match).
    private static func migrateFromVersion2(_ c: SQLiteConnection) throws(RecordsError) {
        try sql { () throws(SQLiteError) in
            try c.execute("""
                DROP TABLE records_fts;
                CREATE VIRTUAL TABLE records_fts USING fts5 (body, content = '', columnsize = 0, tokenize = 'ascii');
                ALTER TABLE records ADD COLUMN fts TEXT NOT NULL DEFAULT '';
                """)
        }
        let (rows, update, insert) = try sql { () throws(SQLiteError) in
            (
                try c.statement("SELECT seq, clear FROM records ORDER BY seq"),
                try c.statement("UPDATE records SET fts = ?2 WHERE seq = ?1"),
                try c.statement("INSERT INTO records_fts (rowid, body) VALUES (?1, ?2)")
            )
        }
        while try sql({ () throws(SQLiteError) in try rows.step() }) {
            let seq = rows.int64(0)
            let clear: [String: FieldValue]
            do throws(FieldMap.Malformed) {
                clear = try FieldMap.decodeRow(clear: rows.bytes(1), sealed: [], tokens: []).clear
            } catch {
                throw .storage(StorageFailure(
                    .malformedStorage, "cannot migrate schema version 2: record row \(seq) is malformed: \(error); the store is left at version 2"))
            }
            let body = fullTextBody(StoredRecord.fullText(of: clear))
            try sql { () throws(SQLiteError) in
                update.reset()
                update.bind(1, seq)
                update.bind(2, body)
                try update.step()
                guard !body.isEmpty else { return }
                insert.reset()
                insert.bind(1, seq)
                insert.bind(2, body)
                try insert.step()
            }
        }
        try sql { () throws(SQLiteError) in
            rows.reset()
            update.reset()
            insert.reset()
            try c.execute("UPDATE schema_version SET version = 3")
        }
    }

    /// Adds record authentication to a version 3 store inside the caller's write transaction: the
    /// `mac` column (every record starts without one: it gets its MAC when next written, and
    /// key rotation writes them all) and the index rotation uses to find records without key id.
    private static func migrateFromVersion3(_ c: SQLiteConnection) throws(RecordsError) {
        try sql { () throws(SQLiteError) in
            try c.execute("""
                ALTER TABLE records ADD COLUMN mac BLOB;
                CREATE INDEX records_unkeyed ON records (seq) WHERE key_id IS NULL AND keying = 0;
                UPDATE schema_version SET version = 4;
                """)
        }
    }

    /// A record's FTS5 body: its indexed terms (`FullText.indexedTerms`) separated by spaces, an
    /// empty position as U+2028 (a term for FTS5's `ascii` tokenizer, which treats every non-ASCII
    /// character as part of a term, but a separator for `FullText`, so no query holds it).
    static func fullTextBody(_ text: String) -> String {
        FullText.indexedTerms(text).map { $0 ?? "\u{2028}" }.joined(separator: " ")
    }
}
