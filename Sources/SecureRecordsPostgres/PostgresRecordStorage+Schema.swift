import Foundation
import PostgresNIO
import SecureRecords

extension PostgresRecordStorage {
    /// The qualified names of the store's tables: `"schema"."<prefix><name>"`.
    struct Tables: Sendable {
        let schema: String
        let prefix: String

        func name(_ table: String) -> String { "\"\(schema)\".\"\(prefix)\(table)\"" }
        /// An index name (unqualified: indexes live in their table's schema).
        func index(_ name: String) -> String { "\"\(prefix)\(name)\"" }

        var format: String { name("format") }
        var store: String { name("store") }
        var storeKeys: String { name("store_keys") }
        var collections: String { name("collections") }
        var records: String { name("records") }
        var clearFields: String { name("clear_fields") }
        var sealedFields: String { name("sealed_fields") }
        var blindIndexes: String { name("blind_indexes") }

        static let all = ["format", "store", "store_keys", "collections", "records", "clear_fields", "sealed_fields", "blind_indexes"]

        /// Bytes of a clear value kept in the equality/prefix index (btree entries are limited in size).
        static let indexedValueBytes = 256

        /// The tables and indexes, version 3 (docs/FORMATS.md, "SecureRecords on PostgreSQL").
        /// The index key rotation finds store-keyed records without key id by.
        var unkeyedIndex: String {
            "CREATE INDEX \(index("records_unkeyed")) ON \(records) (seq) WHERE key_id IS NULL AND keying = 0"
        }

        var ddl: [String] {
            [
                "CREATE TABLE \(format) (format text NOT NULL, version integer NOT NULL)",
                "INSERT INTO \(format) (format, version) VALUES ('\(PostgresRecordStorage.formatName)', \(PostgresRecordStorage.schemaVersion))",
                """
                CREATE TABLE \(store) (
                    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                    store_id bytea NOT NULL CHECK (length(store_id) = 16),
                    current_key_id bigint CHECK (current_key_id BETWEEN 0 AND 4294967295))
                """,
                "CREATE TABLE \(storeKeys) (id bigint PRIMARY KEY CHECK (id BETWEEN 0 AND 4294967295), wrapped bytea NOT NULL)",
                "CREATE TABLE \(collections) (name text PRIMARY KEY, schema text NOT NULL)",
                """
                CREATE TABLE \(records) (
                    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    id uuid NOT NULL UNIQUE,
                    collection text NOT NULL,
                    keying smallint NOT NULL CHECK (keying IN (0, 1)),
                    key_id bigint CHECK (key_id BETWEEN 0 AND 4294967295),
                    fts tsvector NOT NULL,
                    mac bytea)
                """,
                "CREATE INDEX \(index("records_collection")) ON \(records) (collection, seq)",
                "CREATE INDEX \(index("records_key_id")) ON \(records) (key_id, seq) WHERE key_id IS NOT NULL",
                unkeyedIndex,
                "CREATE INDEX \(index("records_fts")) ON \(records) USING gin (fts)",
                """
                CREATE TABLE \(clearFields) (
                    record_id uuid NOT NULL,
                    name text NOT NULL,
                    kind smallint NOT NULL CHECK (kind IN (1, 2)),
                    value bytea NOT NULL,
                    PRIMARY KEY (record_id, name))
                """,
                "CREATE INDEX \(index("clear_fields_value")) ON \(clearFields) (name, kind, substring(value from 1 for \(Self.indexedValueBytes)))",
                """
                CREATE TABLE \(sealedFields) (
                    record_id uuid NOT NULL,
                    name text NOT NULL,
                    sealed bytea NOT NULL,
                    PRIMARY KEY (record_id, name))
                """,
                """
                CREATE TABLE \(blindIndexes) (
                    record_id uuid NOT NULL,
                    name text NOT NULL,
                    key_id bigint NOT NULL,
                    token bytea NOT NULL,
                    PRIMARY KEY (record_id, name))
                """,
                "CREATE INDEX \(index("blind_indexes_token")) ON \(blindIndexes) (token, name, key_id)",
            ]
        }
    }

    /// A 64-bit advisory-lock key for this schema (FNV-1a of a fixed label): stores with different
    /// prefixes in one schema also serialise their set-up, so two never race to create the schema.
    var advisoryLockKey: Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "SecureRecords:\(tables.schema)".utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    /// Creates the tables when none exist and `creatingTables` (under an advisory lock, in one
    /// transaction), or checks that those present are a SecureRecords store of a version this code
    /// reads.
    func migrate(creatingTables: Bool) throws(RecordsError) {
        try write { (tx) throws(RecordsError) in
            try run(tx, "SELECT pg_advisory_xact_lock($1)", Self.binds { $0.append(advisoryLockKey) })
            func exists(_ table: String) throws(RecordsError) -> Bool {
                let row = try run(tx, "SELECT to_regclass($1) IS NOT NULL", Self.binds { $0.append(tables.name(table)) }).first
                guard let row else { return false }
                return try decode(row, Bool.self)
            }
            let schemaExists = try run(
                tx, "SELECT 1 FROM pg_namespace WHERE nspname = $1", Self.binds { $0.append(tables.schema) }
            ).isEmpty == false
            if schemaExists, try exists("format") {
                let rows = try run(tx, "SELECT format, version FROM \(tables.format)")
                guard rows.count == 1, let row = rows.first else {
                    throw .notARecordStore("\(tables.format) does not hold one format row")
                }
                let (format, version) = try decode(row, (String, Int32).self)
                guard format == Self.formatName else { throw .notARecordStore("\(tables.format) names format '\(format)'") }
                guard (1...Self.schemaVersion).contains(version) else {
                    throw .notARecordStore("table format version \(version) is newer than this library supports (\(Self.schemaVersion))")
                }
                for table in Tables.all where !(try exists(table)) {
                    throw .notARecordStore("table \(tables.name(table)) is missing")
                }
                if version == 1 { try reindexFullText(tx) }
                if version < 3 { try addRecordAuthentication(tx) }
                return
            }
            guard creatingTables else {
                throw .notARecordStore(
                    "no store tables in schema \"\(tables.schema)\" with table prefix \"\(configuration.tablePrefix)\" "
                        + "(opening it for writing makes them: sf records add or import)")
            }
            if schemaExists {
                for table in Tables.all where try exists(table) {
                    throw .notARecordStore("table \(tables.name(table)) exists but is not part of a SecureRecords store")
                }
            } else {
                try run(tx, "CREATE SCHEMA IF NOT EXISTS \"\(tables.schema)\"")
            }
            for statement in tables.ddl { try run(tx, statement) }
        }
    }

    /// Moves a version 2 store to version 3 in the caller's transaction: the `mac` column (every
    /// record starts without one and gets it when next written; key rotation writes them all) and
    /// the index of records without key id.
    private func addRecordAuthentication(_ tx: Transaction) throws(RecordsError) {
        try run(tx, "ALTER TABLE \(tables.records) ADD COLUMN mac bytea")
        try run(tx, tables.unkeyedIndex)
        try run(tx, "UPDATE \(tables.format) SET version = \(Self.schemaVersion)")
    }

    /// Moves a version 1 store to version 2 in the caller's transaction: every record's `fts` is
    /// recomputed from its clear text values with `FullText` (version 1 folded with its own
    /// tokenizer, which did not match SQLite's). Holds the store's clear text in memory once.
    private func reindexFullText(_ tx: Transaction) throws(RecordsError) {
        var clear: [UUID: [String: FieldValue]] = [:]
        for row in try run(tx, "SELECT record_id, name, value FROM \(tables.clearFields) WHERE kind = 1") {
            let (id, name, value) = try decode(row, (UUID, String, ByteBuffer).self)
            clear[id, default: [:]][name] = .string(String(buffer: value))
        }
        let ids = Array(clear.keys)
        let fts = ids.map { PostgresFullText.tsvector(StoredRecord.fullText(of: clear[$0] ?? [:])) }
        try run(tx, "UPDATE \(tables.records) SET fts = ''::tsvector")
        try run(
            tx, "UPDATE \(tables.records) AS r SET fts = u.fts::tsvector FROM unnest($1::uuid[], $2::text[]) AS u(id, fts) WHERE r.id = u.id",
            Self.binds {
                $0.append(ids)
                $0.append(fts)
            })
        try run(tx, "UPDATE \(tables.format) SET version = 2")
    }
}
