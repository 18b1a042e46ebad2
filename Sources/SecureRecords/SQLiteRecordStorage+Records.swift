import Foundation
import SQLiteSupport
import SecureCore

// A record's rows: writing (the `records` row and its clear-value, blind-index and full-text rows),
// deleting and loading, one transaction per call.
extension SQLiteRecordStorage {
    private static func seq(of id: UUID, _ c: SQLiteConnection) throws(SQLiteError) -> Int64? {
        let select = try c.statement("SELECT seq FROM records WHERE id = ?1")
        select.bind(1, RecordContext.bytes(of: id))
        guard try select.step() else { return nil }
        let seq = select.int64(0)
        select.reset()
        return seq
    }

    /// The prepared inserts of one record's rows, fetched once per batch.
    struct RowWriter {
        let record, clear, index, fts: SQLiteStatement
        let connection: SQLiteConnection

        init(_ c: SQLiteConnection) throws(SQLiteError) {
            connection = c
            record = try c.statement(
                "INSERT INTO records (seq, id, collection, keying, key_id, clear, sealed, tokens, fts, mac) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")
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
            record.bind(6, FieldMap.encode(clear: stored.clear))
            record.bind(7, FieldMap.encode(stored.sealed))
            record.bind(8, FieldMap.encode(stored.blindIndexes))
            let body = SQLiteRecordStorage.fullTextBody(stored.fullText)
            record.bind(9, body)
            if let mac = stored.mac { record.bind(10, mac) }
            try record.step()
            let rowSeq = seq ?? connection.lastInsertRowID
            try SQLiteRecordStorage.stepSearchRows(of: stored, seq: rowSeq, clear: clear, index: index)
            if !body.isEmpty {
                fts.reset()
                fts.bind(1, rowSeq)
                fts.bind(2, body)
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
    /// content; the body is the row's `fts` column, so a change of folding between versions cannot
    /// leave a stale entry), then its `records` row.
    private static func deleteRows(_ stored: StoredRecord, seq: Int64, _ c: SQLiteConnection) throws(SQLiteError) {
        try stepSearchRows(
            of: stored, seq: seq,
            clear: c.statement("DELETE FROM clear_fields WHERE name = ?1 AND kind = ?2 AND value = ?3 AND seq = ?4"),
            index: c.statement("DELETE FROM blind_indexes WHERE token = ?1 AND name = ?2 AND key_id = ?3 AND seq = ?4"))
        let indexed = try c.statement("SELECT fts FROM records WHERE seq = ?1")
        indexed.bind(1, seq)
        let body = try indexed.step() ? indexed.text(0) : ""
        indexed.reset()
        if !body.isEmpty {
            let fts = try c.statement("INSERT INTO records_fts (records_fts, rowid, body) VALUES ('delete', ?1, ?2)")
            fts.bind(1, seq)
            fts.bind(2, body)
            try fts.step()
        }
        let record = try c.statement("DELETE FROM records WHERE seq = ?1")
        record.bind(1, seq)
        try record.step()
    }

    static func insertRecords(_ records: [StoredRecord], _ c: SQLiteConnection) throws(RecordsError) {
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

    /// `RecordStorage.insert(_:ifAccepted:)`, in one SQLite transaction (writers are serialised,
    /// so the metadata `accept` sees is the store's until the insert commits).
    public func insert(
        _ records: [StoredRecord], ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool
    ) throws(RecordsError) -> Bool {
        try transaction(write: true) { (c) throws(RecordsError) -> Bool in
            guard try accept(try Self.loadMetadata(c)) else { return false }
            try Self.insertRecords(records, c)
            return true
        }
    }

    /// `RecordStorage.insertInOneTransaction`, in one SQLite transaction: `accept` is asked first,
    /// then each batch is written when it is inserted, while the caller prepares the next. (The
    /// connection is used by one thread at a time: the caller is blocked in `body` while another
    /// thread inserts.)
    public func insertInOneTransaction(
        ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool,
        _ body: (_ insert: ([StoredRecord]) throws(RecordsError) -> Void) throws(RecordsError) -> Void
    ) throws(RecordsError) -> Bool {
        try transaction(write: true) { (c) throws(RecordsError) -> Bool in
            guard try accept(try Self.loadMetadata(c)) else { return false }
            // An insert that failed fails the load, even if `body` caught its error and went on.
            var insertFailure: RecordsError?
            try body { (batch) throws(RecordsError) in
                if let insertFailure { throw insertFailure }
                do throws(RecordsError) { try Self.insertRecords(batch, c) } catch {
                    insertFailure = error
                    throw error
                }
            }
            if let insertFailure { throw insertFailure }
            return true
        }
    }

    /// `RecordStorage.replace`, in one SQLite transaction.
    public func replace(_ records: [StoredRecord]) throws(RecordsError) {
        try transaction(write: true) { (c) throws(RecordsError) in
            for record in records where try !Self.replace(record, ifUnchangedFrom: nil, c) { throw .recordNotFound(record.id) }
        }
    }

    /// `RecordStorage.replace(_:ifUnchangedFrom:)`, in one SQLite write transaction (which excludes
    /// every other writer of the file).
    public func replace(_ records: [StoredRecord], ifUnchangedFrom expected: [StoredRecord]) throws(RecordsError) -> Set<UUID> {
        try transaction(write: true) { (c) throws(RecordsError) in try Self.replace(records, ifUnchangedFrom: expected, c) }
    }

    /// `RecordStorage.replace(_:ifUnchangedFrom:ifAccepted:)`, in one SQLite write transaction that
    /// asks `accept` first.
    public func replace(
        _ records: [StoredRecord], ifUnchangedFrom expected: [StoredRecord], ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool
    ) throws(RecordsError) -> Set<UUID>? {
        try transaction(write: true) { (c) throws(RecordsError) -> Set<UUID>? in
            guard try accept(try Self.loadMetadata(c)) else { return nil }
            return try Self.replace(records, ifUnchangedFrom: expected, c)
        }
    }

    /// Replaces each of `records` whose row is still its namesake in `expected`; the ids left alone.
    private static func replace(_ records: [StoredRecord], ifUnchangedFrom expected: [StoredRecord], _ c: SQLiteConnection) throws(RecordsError) -> Set<UUID> {
        let expected = Dictionary(expected.map { ($0.id, $0) }) { _, last in last }
        var skipped = Set<UUID>()
        for record in records {
            guard let previous = expected[record.id], try replace(record, ifUnchangedFrom: previous, c) else {
                skipped.insert(record.id)
                continue
            }
        }
        return skipped
    }

    /// Replaces the row of `record` when it exists and, if `expected` is given, equals it; whether it did.
    private static func replace(_ record: StoredRecord, ifUnchangedFrom expected: StoredRecord?, _ c: SQLiteConnection) throws(RecordsError) -> Bool {
        guard let seq = try sql({ () throws(SQLiteError) in try seq(of: record.id, c) }), let old = try load(seqs: [seq], c).first,
            expected.map({ $0.isIdentical(to: old) }) ?? true
        else { return false }
        try sql { () throws(SQLiteError) in
            try deleteRows(old, seq: seq, c)
            try RowWriter(c).write(record, seq: seq)
        }
        return true
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
    static func load(seqs: [Int64], _ c: SQLiteConnection) throws(RecordsError) -> [StoredRecord] {
        var result: [StoredRecord] = []
        result.reserveCapacity(seqs.count)
        let head = try sql { () throws(SQLiteError) in
            try c.statement("SELECT id, collection, keying, key_id, clear, sealed, tokens, mac FROM records WHERE seq = ?1")
        }
        for seq in seqs {
            head.reset()
            head.bind(1, seq)
            guard try sql({ () throws(SQLiteError) in try head.step() }) else { continue }
            defer { head.reset() }
            func malformed(_ reason: String) -> RecordsError {
                .storage(StorageFailure(.malformedStorage, "record row \(seq) is malformed: \(reason)"))
            }
            guard let id = uuid(head.bytes(0)) else { throw malformed("its id is not 16 bytes") }
            let clear: [String: FieldValue], sealed: [String: Data], tokens: [String: Data]
            do throws(FieldMap.Malformed) {
                (clear, sealed, tokens) = try FieldMap.decodeRow(clear: head.bytes(4), sealed: head.bytes(5), tokens: head.bytes(6))
            } catch {
                throw malformed(error.description)
            }
            result.append(StoredRecord(
                id: id, collection: head.text(1), keying: head.int64(2) == 0 ? .storeKey : .password,
                keyId: head.isNull(3) ? nil : try WrappedStoreKey.id(stored: head.int64(3), in: "record row \(seq)"),
                clear: clear, sealed: sealed, blindIndexes: tokens,
                mac: head.isNull(7) ? nil : Data(head.bytes(7))))
        }
        return result
    }

    /// `RecordStorage.records(withKeyIdOtherThan:after:limit:)`, in one SQLite transaction.
    public func records(withKeyIdOtherThan keyId: UInt32, after position: Int64, limit: Int) throws(RecordsError)
        -> (records: [StoredRecord], last: Int64)
    {
        // Walks `seq` from the position; the conditions filter the rows met, so a page costs the
        // rows it passes, not a sort of every record left.
        try page(
            "SELECT seq FROM records WHERE seq > ?1 AND ((key_id IS NOT NULL AND key_id != ?3) OR (key_id IS NULL AND keying = 0)) ORDER BY seq LIMIT ?2",
            after: position, limit: limit
        ) { $0.bind(3, Int64(keyId)) }
    }

    /// `RecordStorage.allRecords`, in one SQLite transaction.
    public func allRecords(after position: Int64, limit: Int) throws(RecordsError) -> (records: [StoredRecord], last: Int64) {
        try page("SELECT seq FROM records WHERE seq > ?1 ORDER BY seq LIMIT ?2", after: position, limit: limit)
    }

    /// The records of the `seq`s `query` selects (bound: `?1` the position, `?2` the limit, others
    /// by `bind`), in one transaction, and the last `seq` (`position` when none).
    private func page(
        _ query: String, after position: Int64, limit: Int, bind: (SQLiteStatement) -> Void = { _ in }
    ) throws(RecordsError) -> (records: [StoredRecord], last: Int64) {
        try transaction(write: false) { (c) throws(RecordsError) in
            let seqs = try Self.sql { () throws(SQLiteError) -> [Int64] in
                let select = try c.statement(query)
                select.bind(1, position)
                select.bind(2, Int64(max(0, limit)))
                bind(select)
                var seqs: [Int64] = []
                while try select.step() { seqs.append(select.int64(0)) }
                return seqs
            }
            return (try Self.load(seqs: seqs, c), seqs.last ?? position)
        }
    }

    /// The UUID of 16 stored bytes.
    static func uuid(_ bytes: [UInt8]) -> UUID? {
        guard bytes.count == 16 else { return nil }
        return UUID(uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
