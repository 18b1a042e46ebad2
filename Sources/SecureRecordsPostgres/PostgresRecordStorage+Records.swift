import Foundation
import NIOCore
import PostgresNIO
import SecureRecords

extension PostgresRecordStorage {
    /// Column arrays of a group of records (`groups`): one `INSERT ... SELECT FROM unnest(...)` per
    /// table, so a group costs four statements, not a round trip per row.
    struct Columns {
        var ids: [UUID] = []
        var collections: [String] = []
        var keyings: [Int16] = []
        var keyIds: [Int64] = []  // -1 for none (arrays carry no NULLs here)
        var fts: [String] = []
        /// Each record's `mac` as `0x01 || mac`, or empty for none (arrays carry no NULLs here).
        var macs: [ByteBuffer] = []
        var clearIds: [UUID] = [], clearNames: [String] = [], clearKinds: [Int16] = [], clearValues: [ByteBuffer] = []
        var sealedIds: [UUID] = [], sealedNames: [String] = [], sealedValues: [ByteBuffer] = []
        var indexIds: [UUID] = [], indexNames: [String] = [], indexKeyIds: [Int64] = [], indexTokens: [ByteBuffer] = []
        /// Per field table, the records whose rows there are (re)written: all of them, except those
        /// whose rows there are byte for byte the ones `previous` holds.
        var rewritten: (clear: [UUID], sealed: [UUID], indexes: [UUID]) = ([], [], [])

        /// The columns of `records`; `previous`, the rows as they are stored, for a rewrite.
        init(_ records: [StoredRecord], previous: [UUID: StoredRecord] = [:]) {
            ids.reserveCapacity(records.count)
            for record in records {
                ids.append(record.id)
                collections.append(record.collection)
                keyings.append(record.keying == .storeKey ? 0 : 1)
                keyIds.append(record.keyId.map { Int64($0) } ?? -1)
                fts.append(PostgresFullText.tsvector(record.fullText))
                macs.append(record.mac.map { PostgresRecordStorage.buffer(Data([1]) + $0) } ?? ByteBuffer())
                let old = previous[record.id]
                func kept(_ same: (StoredRecord) -> Bool) -> Bool { old.map(same) ?? false }
                if !kept({ StoredRecord.identical(record.clear, $0.clear) }) { appendClear(record) }
                if !kept({ StoredRecord.identical(record.sealed, $0.sealed) }) { appendSealed(record) }
                // Index rows carry the record's key id too.
                if !kept({ ($0.keyId == record.keyId || record.blindIndexes.isEmpty) && StoredRecord.identical(record.blindIndexes, $0.blindIndexes) }) {
                    appendIndexes(record)
                }
            }
        }

        private mutating func appendClear(_ record: StoredRecord) {
            rewritten.clear.append(record.id)
            for (name, value) in record.clear {
                clearIds.append(record.id)
                clearNames.append(name)
                switch value {
                case .string(let s):
                    clearKinds.append(1)
                    clearValues.append(ByteBuffer(string: s))
                case .bytes(let b):
                    clearKinds.append(2)
                    clearValues.append(PostgresRecordStorage.buffer(b))
                }
            }
        }

        private mutating func appendSealed(_ record: StoredRecord) {
            rewritten.sealed.append(record.id)
            for (name, value) in record.sealed {
                sealedIds.append(record.id)
                sealedNames.append(name)
                sealedValues.append(PostgresRecordStorage.buffer(value))
            }
        }

        private mutating func appendIndexes(_ record: StoredRecord) {
            rewritten.indexes.append(record.id)
            for (name, token) in record.blindIndexes {
                indexIds.append(record.id)
                indexNames.append(name)
                indexKeyIds.append(Int64(record.keyId ?? 0))
                indexTokens.append(PostgresRecordStorage.buffer(token))
            }
        }
    }

    /// The most bytes of rows sent as one group (one `COPY` into each table, or one `INSERT` or
    /// `UPDATE` statement per table), roughly: a bound on the memory of a group and on the size of
    /// its buffers and of each message to the server, whatever the size of a batch's values. A
    /// record larger than that is a group alone: one that `add` or `update` wrote holds at most
    /// `RecordStore.Configuration.maximumRecordBytesCeiling`, far below the server's 1 GiB per
    /// message and the 2 GiB a bound value's 32-bit length takes; one from an import, at most its
    /// 1 GiB line.
    static let groupBytes = 32 << 20

    /// `records` in groups of at most about `groupBytes` of rows each, in order (a record larger
    /// than that alone).
    static func groups(_ records: [StoredRecord]) -> [ArraySlice<StoredRecord>] {
        var groups: [ArraySlice<StoredRecord>] = []
        var start = records.startIndex, bytes = 0
        for (index, record) in zip(records.indices, records) {
            // A row's columns other than its values take under 200 bytes plus its names. The
            // strings are also indexed: the record's full-text vector is a few bytes per byte of
            // text (more where compatibility forms expand), and never above FullText's ceiling.
            var size = 200 * (1 + record.clear.count + record.sealed.count + record.blindIndexes.count)
            var text = 0
            for (name, value) in record.clear {
                size += name.utf8.count
                switch value {
                case .string(let s):
                    size += s.utf8.count
                    text += s.utf8.count
                case .bytes(let b): size += b.count
                }
            }
            size += min(8 * text, FullText.maximumIndexBytes)
            size += record.sealed.reduce(0) { $0 + $1.key.utf8.count + $1.value.count }
            size += record.blindIndexes.reduce(0) { $0 + $1.key.utf8.count + $1.value.count }
            size += (record.mac?.count ?? 0) + record.collection.utf8.count
            if bytes > 0 && bytes + size > groupBytes {
                groups.append(records[start..<index])
                start = index
                bytes = 0
            }
            bytes += size
        }
        if start < records.endIndex { groups.append(records[start...]) }
        return groups
    }

    /// The statements inserting the field rows of `c` (after the record rows).
    func fieldInserts(_ c: Columns) -> [(String, PostgresBindings)] {
        let t = tables
        var statements: [(String, PostgresBindings)] = []
        if !c.clearIds.isEmpty {
            statements.append((
                "INSERT INTO \(t.clearFields) (record_id, name, kind, value) SELECT * FROM unnest($1::uuid[], $2::text[], $3::int2[], $4::bytea[])",
                Self.binds {
                    $0.append(c.clearIds)
                    $0.append(c.clearNames)
                    $0.append(c.clearKinds)
                    $0.append(c.clearValues)
                }))
        }
        if !c.sealedIds.isEmpty {
            statements.append((
                "INSERT INTO \(t.sealedFields) (record_id, name, sealed) SELECT * FROM unnest($1::uuid[], $2::text[], $3::bytea[])",
                Self.binds {
                    $0.append(c.sealedIds)
                    $0.append(c.sealedNames)
                    $0.append(c.sealedValues)
                }))
        }
        if !c.indexIds.isEmpty {
            statements.append((
                "INSERT INTO \(t.blindIndexes) (record_id, name, key_id, token) SELECT * FROM unnest($1::uuid[], $2::text[], $3::int8[], $4::bytea[])",
                Self.binds {
                    $0.append(c.indexIds)
                    $0.append(c.indexNames)
                    $0.append(c.indexKeyIds)
                    $0.append(c.indexTokens)
                }))
        }
        return statements
    }

    /// The record columns as the six unnest arrays `$1`...`$6` (id, collection, keying, key_id, fts, mac).
    static func recordBinds(_ c: Columns) -> PostgresBindings {
        binds {
            $0.append(c.ids)
            $0.append(c.collections)
            $0.append(c.keyings)
            $0.append(c.keyIds)
            $0.append(c.fts)
            $0.append(c.macs)
        }
    }

    /// The stored `mac` of an unnest row's `u.mac` (see `Columns.macs`).
    static let macColumn = "CASE WHEN length(u.mac) = 0 THEN NULL ELSE substring(u.mac from 2) END"

    /// Inserts new records: per group (`groups`), the record rows, then the field rows (four
    /// statements), all pipelined.
    func insertRecords(_ records: [StoredRecord], _ tx: Transaction) throws(RecordsError) {
        let statements = try insertStatements(records)
        guard !statements.isEmpty else { return }
        do throws(PostgresSession.PostgresFailure) {
            _ = try tx.pipeline(statements)
        } catch {
            throw Self.insertFailure(error, firstId: records[0].id, tx)
        }
    }

    /// The statements of `insertRecords` (none for no records), for each group of `groups`;
    /// `duplicateRecord` for an id given twice.
    func insertStatements(_ records: [StoredRecord]) throws(RecordsError) -> [(String, PostgresBindings)] {
        guard !records.isEmpty else { return [] }
        try Self.checkUniqueIds(records)
        let insert = """
            INSERT INTO \(tables.records) (id, collection, keying, key_id, fts, mac)
            SELECT u.id, u.collection, u.keying, NULLIF(u.key_id, -1), u.fts::tsvector, \(Self.macColumn)
            FROM unnest($1::uuid[], $2::text[], $3::int2[], $4::int8[], $5::text[], $6::bytea[])
                WITH ORDINALITY AS u(id, collection, keying, key_id, fts, mac, ord)
            ORDER BY u.ord
            """
        return Self.groups(records).flatMap { group in
            let c = Columns(Array(group))
            return [(insert, Self.recordBinds(c))] + fieldInserts(c)
        }
    }

    /// The error of an insert that failed: `duplicateRecord` for a unique violation (the only
    /// unique key a new record row has is its id), naming the id the server names, else `firstId`.
    static func insertFailure(_ error: PostgresSession.PostgresFailure, firstId: UUID, _ tx: Transaction) -> RecordsError {
        guard error.sqlState == "23505" else { return tx.map(error) }
        return .duplicateRecord(duplicateId(in: error.error, otherwise: firstId))
    }

    /// Inserts new records as `insertRecords` does, with `COPY ... FROM STDIN` into each table (in
    /// groups of `groupBytes`): for bulk loads (an import's batches, a replayed
    /// `insertInOneTransaction`), where it costs the server far less per row than `INSERT`.
    func copyRecords(_ records: [StoredRecord], _ tx: Transaction) throws(RecordsError) {
        try Self.checkUniqueIds(records)
        for group in Self.groups(records) { try copy(PostgresCopyRows(group), tx) }
    }

    /// `duplicateRecord` if an id is given twice.
    static func checkUniqueIds(_ records: [StoredRecord]) throws(RecordsError) {
        if let duplicate = firstDuplicate(records.map(\.id)) { throw .duplicateRecord(duplicate) }
    }

    /// Copies `rows` into the four tables; `duplicateRecord` if an id exists.
    func copy(_ rows: PostgresCopyRows, _ tx: Transaction) throws(RecordsError) {
        try finishCopy(startCopy(rows, tx), of: rows, tx)
    }

    /// Starts copying `rows` into the four tables (`Transaction.startCopy`).
    func startCopy(_ rows: PostgresCopyRows, _ tx: Transaction) -> CopyInProgress {
        let prefix = tables.prefix
        return tx.startCopy([
            (prefix + "records", PostgresCopyRows.recordColumns, rows.records),
            (prefix + "clear_fields", PostgresCopyRows.clearColumns, rows.clear),
            (prefix + "sealed_fields", PostgresCopyRows.sealedColumns, rows.sealed),
            (prefix + "blind_indexes", PostgresCopyRows.indexColumns, rows.blindIndexes),
        ])
    }

    /// Waits for the copy of `rows` started as `copying`; `duplicateRecord` if an id exists.
    func finishCopy(_ copying: CopyInProgress, of rows: PostgresCopyRows, _ tx: Transaction) throws(RecordsError) {
        do throws(PostgresSession.PostgresFailure) {
            try tx.finish(copying)
        } catch {
            throw Self.insertFailure(error, firstId: rows.firstId, tx)
        }
    }

    /// Whether every record of `records` is in the store (by id): after a server restart, whether
    /// an insert whose COMMIT went unanswered was stored (all of them or none: one transaction;
    /// ids are the client's, so no other writer stores them).
    func allStored(_ records: [StoredRecord], _ tx: Transaction) throws(RecordsError) -> Bool {
        guard !records.isEmpty else { return true }
        let rows = try run(tx, "SELECT count(*) FROM \(tables.records) WHERE id = ANY($1::uuid[])", Self.binds { $0.append(records.map(\.id)) })
        guard let row = rows.first else { return false }
        let stored: Int64 = try decode(row, Int64.self)
        return stored == Int64(Set(records.map(\.id)).count)
    }

    static func firstDuplicate(_ ids: [UUID]) -> UUID? {
        var seen = Set<UUID>()
        return ids.first { !seen.insert($0).inserted }
    }

    /// The id named in a unique violation's detail ("Key (id)=(…) already exists."), else `otherwise`.
    static func duplicateId(in error: any Error, otherwise: UUID) -> UUID {
        if let detail = (error as? PSQLError)?.serverInfo?[.detail], let open = detail.range(of: "=("),
            let close = detail.range(of: ")", range: open.upperBound..<detail.endIndex),
            let id = UUID(uuidString: String(detail[open.upperBound..<close.lowerBound]))
        {
            return id
        }
        return otherwise
    }

    /// `RecordStorage.insert`, in one transaction.
    public func insert(_ records: [StoredRecord]) throws(RecordsError) {
        try session.transaction(readOnly: false, wasCommitted: { (tx) throws(RecordsError) in try self.allStored(records, tx) }) {
            (tx) throws(RecordsError) in try insertRecords(records, tx)
        }
    }

    /// `RecordStorage.insert(_:ifAccepted:)`, in one transaction: after BEGIN, the metadata's read
    /// (holding the store's keys, `metadataStatements(holding:)`) and the inserts are sent at once,
    /// then the transaction is committed if `accept` takes the metadata, else rolled back (three
    /// round trips).
    public func insert(
        _ records: [StoredRecord], ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool
    ) throws(RecordsError) -> Bool {
        let inserts = try insertStatements(records)
        return try session.transaction(
            readOnly: false, commitIf: { $0 }, wasCommitted: { (tx) throws(RecordsError) in try self.allStored(records, tx) }
        ) { (tx) throws(RecordsError) -> Bool in
            let reads = metadataStatements(holding: true)
            let results = tx.pipelineResults(reads + inserts)
            let rows: (store: [PostgresRow], keys: [PostgresRow])
            do throws(PostgresSession.PostgresFailure) {
                for result in results.prefix(reads.count - 2) { _ = try result.get() }
                rows = (try results[reads.count - 2].get(), try results[reads.count - 1].get())
            } catch {
                throw tx.map(error)
            }
            // The check's verdict comes first: a store that refuses the write is not asked about
            // the inserts' own failure (a duplicate id, say).
            guard try accepts(accept, try decodeMetadata(rows.store, rows.keys), tx) else { return false }
            for result in results.dropFirst(reads.count) {
                if case .failure(let error) = result { throw Self.insertFailure(error, firstId: records[0].id, tx) }
            }
            return true
        }
    }

    /// `RecordStorage.insertInOneTransaction`, in one transaction: the metadata is read and handed
    /// to `accept` first (a refusal costs nothing), then each batch is handed to a `CopySender`
    /// thread when it is inserted, which encodes and copies it to the server while the caller seals
    /// the next; at the end `accept` is asked again, holding the store's keys to the commit
    /// (`metadataStatements(holding:)`), so that a key rotation waits for the commit only, never for
    /// the whole load, and a load it overtook is refused (rolled back).
    /// The batches are kept, so that when the transaction must run again (a lost connection, a
    /// serialization failure) it does so with every batch, and `body` runs once: such a failure
    /// while `body` is still inserting is held until it ends (each batch it inserts meanwhile
    /// counts as progress for the deadline); any other failure ends `body` at its next insert.
    public func insertInOneTransaction(
        ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool,
        _ body: (_ insert: ([StoredRecord]) throws(RecordsError) -> Void) throws(RecordsError) -> Void
    ) throws(RecordsError) -> Bool {
        var batches: [[StoredRecord]] = []
        var outcome: Result<Void, RecordsError>?  // the body's, once it has run
        func load(_ tx: Transaction) throws(RecordsError) {
            let sender = CopySender(storage: self, transaction: tx)
            // Whether the sender's failure will have the transaction run again (then it is held).
            func retried() -> Bool {
                guard let last = tx.failures.last else { return false }
                return last.isConnectionLost || last.isTransient
            }
            // An insert that failed fails the load, even if `body` caught its error and went on.
            var insertFailure: RecordsError?
            do throws(RecordsError) {
                try body { (batch) throws(RecordsError) in
                    if let insertFailure { throw insertFailure }
                    guard !batch.isEmpty else { return }
                    do throws(RecordsError) {
                        try Self.checkUniqueIds(batch)
                    } catch {
                        insertFailure = error
                        throw error
                    }
                    batches.append(batch)
                    if let failure = sender.failure {
                        guard retried() else {
                            insertFailure = failure
                            throw failure
                        }
                        return tx.deadline.progressed()
                    }
                    sender.send(batch)
                }
                if let insertFailure { throw insertFailure }
                outcome = .success(())
            } catch {
                outcome = .failure(error)
                _ = sender.finish(discarding: true)
                // The load's own error ends it, not a lost connection the sender met meanwhile.
                tx.failures.abandon()
                throw error
            }
            if let failure = sender.finish() {
                if !retried() { outcome = .failure(failure) }
                throw failure
            }
        }
        let accepted = try session.transaction(
            readOnly: false, bulk: true, commitIf: { $0 }, wasCommitted: { (tx) throws(RecordsError) in try self.allStored(batches.flatMap { $0 }, tx) }
        ) { (tx) throws(RecordsError) -> Bool in
            guard try accepts(accept, tx, holding: false) else { return false }
            switch outcome {
            case .failure(let error): throw error
            case .success: for batch in batches { try copyRecords(batch, tx) }
            case nil: try load(tx)
            }
            return try accepts(accept, tx, holding: true)
        }
        if accepted { analyze(afterLoading: batches.reduce(0) { $0 + $1.count }) }
        return accepted
    }

    /// After a bulk load of `count` records, runs ANALYZE on the record tables when the load is
    /// large against what the planner last knew of them (autovacuum's own rule: more than 50 rows
    /// plus a tenth of the table), as PostgreSQL's documentation advises after a bulk load: until
    /// autovacuum's next analyze, a minute or more later, the planner guesses, and looks records up
    /// by id with scans of whole field tables (a key rotation of 100,000 records just loaded took
    /// 17–52 s, depending on when that analyze came). Best effort: a failure leaves it to
    /// autovacuum, a role that does not own the tables only gets a warning, and a table another
    /// session holds (a VACUUM, an index build) is skipped rather than waited for.
    func analyze(afterLoading count: Int) {
        guard count > 50 else { return }
        _ = try? write { (tx) throws(RecordsError) in
            let rows = try run(tx, "SELECT reltuples FROM pg_class WHERE oid = to_regclass($1)", Self.binds { $0.append(tables.records) })
            let known: Float = try rows.first.map { (row) throws(RecordsError) -> Float in try decode(row, Float.self) } ?? -1  // -1: never analyzed
            guard known < 0 || Double(count) > 50 + Double(known) / 10 else { return }
            let t = tables
            try run(tx, "ANALYZE (SKIP_LOCKED) \(t.records), \(t.clearFields), \(t.sealedFields), \(t.blindIndexes)")
        }
    }

    /// The statements deleting the field rows of the records `ids` in each field table.
    func fieldDeletes(_ ids: (clear: [UUID], sealed: [UUID], indexes: [UUID])) -> [(String, PostgresBindings)] {
        [(tables.clearFields, ids.clear), (tables.sealedFields, ids.sealed), (tables.blindIndexes, ids.indexes)]
            .filter { !$0.1.isEmpty }
            .map { table, ids in ("DELETE FROM \(table) WHERE record_id = ANY($1::uuid[])", Self.binds { $0.append(ids) }) }
    }

    /// `RecordStorage.replace`, in one transaction: per group (`groups`), the record rows are
    /// updated (taking their locks), then their field rows rewritten, all pipelined. A missing id
    /// rolls everything back.
    public func replace(_ records: [StoredRecord]) throws(RecordsError) {
        guard !records.isEmpty else { return }
        // An id given twice: the last one wins, as with SQLite's sequential rewrite.
        var last: [UUID: Int] = [:]
        for (index, record) in records.enumerated() { last[record.id] = index }
        let unique = records.enumerated().filter { last[$0.element.id] == $0.offset }.map(\.element)
        try write { (tx) throws(RecordsError) in
            let found = try replaceRows(unique, tx)
            if let missing = unique.first(where: { !found.contains($0.id) }) { throw .recordNotFound(missing.id) }
        }
    }

    /// `RecordStorage.replace(_:ifUnchangedFrom:)`, in one transaction (`replace(_:ifUnchangedFrom:rows:_:)`).
    public func replace(_ records: [StoredRecord], ifUnchangedFrom expected: [StoredRecord]) throws(RecordsError) -> Set<UUID> {
        let candidates = Self.candidates(records, expected)
        return try write { (tx) throws(RecordsError) in
            let (lock, binds) = lockStatement(candidates)
            return try replace(records, candidates, ifUnchangedFrom: expected, rows: try run(tx, lock, binds), tx)
        }
    }

    /// `RecordStorage.replace(_:ifUnchangedFrom:ifAccepted:)`, in one transaction: the metadata's
    /// read (holding the store's keys, `metadataStatements(holding:)`) and the locking read of the
    /// records are sent at once, then the records are replaced if `accept` takes the metadata, else
    /// the transaction is rolled back.
    public func replace(
        _ records: [StoredRecord], ifUnchangedFrom expected: [StoredRecord], ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool
    ) throws(RecordsError) -> Set<UUID>? {
        let candidates = Self.candidates(records, expected)
        return try session.transaction(readOnly: false, commitIf: { $0 != nil }) { (tx) throws(RecordsError) -> Set<UUID>? in
            let reads = metadataStatements(holding: true)
            let results: [[PostgresRow]]
            do throws(PostgresSession.PostgresFailure) {
                results = try tx.pipeline(reads + [lockStatement(candidates)])
            } catch {
                throw tx.map(error)
            }
            guard try accepts(accept, try decodeMetadata(results[reads.count - 2], results[reads.count - 1]), tx) else { return nil }
            return try replace(records, candidates, ifUnchangedFrom: expected, rows: results[reads.count], tx)
        }
    }

    /// The records of `records` that have a namesake in `expected`, by id.
    private static func candidates(_ records: [StoredRecord], _ expected: [StoredRecord]) -> [UUID: StoredRecord] {
        let expected = Set(expected.map(\.id))
        return Dictionary(records.filter { expected.contains($0.id) }.map { ($0.id, $0) }) { _, last in last }
    }

    /// The statement locking the record rows of `candidates` (`FOR UPDATE`, in id order) as it
    /// reads them, so that no other writer changes them between the comparison and the write.
    private func lockStatement(_ candidates: [UUID: StoredRecord]) -> (String, PostgresBindings) {
        let ids = candidates.keys.sorted { $0.uuidString < $1.uuidString }
        return (
            "SELECT \(Self.recordColumns) FROM \(tables.records) r WHERE r.id = ANY($1::uuid[]) ORDER BY r.id FOR UPDATE",
            Self.binds { $0.append(ids) }
        )
    }

    /// Replaces, in `tx`, each of `records` (`candidates`: those with a namesake in `expected`)
    /// whose row (among `rows`, read by `lockStatement`) is still its namesake in `expected`;
    /// returns the ids left alone.
    private func replace(
        _ records: [StoredRecord], _ candidates: [UUID: StoredRecord], ifUnchangedFrom expected: [StoredRecord], rows: [PostgresRow],
        _ tx: Transaction
    ) throws(RecordsError) -> Set<UUID> {
        let expected = Dictionary(expected.map { ($0.id, $0) }) { _, last in last }
        let stored = try load(rows, tx).filter { expected[$0.id]?.isIdentical(to: $0) == true }
        let unchanged = stored.compactMap { candidates[$0.id] }
        // Field rows that stay as they are (a rotation's clear fields) are not rewritten.
        _ = try replaceRows(unchanged, previous: Dictionary(stored.map { ($0.id, $0) }) { first, _ in first }, tx)
        return Set(records.map(\.id)).subtracting(unchanged.map(\.id))
    }

    /// Rewrites the rows of `records` (ids unique) in `tx`, leaving the field rows that are
    /// byte for byte those of `previous` (the rows as stored); returns the ids that exist.
    private func replaceRows(
        _ records: [StoredRecord], previous: [UUID: StoredRecord] = [:], _ tx: Transaction
    ) throws(RecordsError) -> Set<UUID> {
        guard !records.isEmpty else { return [] }
        // Each group's statements, pipelined with the others' (`groups`).
        var statements: [(String, PostgresBindings)] = []
        var updates: [Int] = []  // the index of each group's UPDATE among `statements`
        for group in Self.groups(records) {
            updates.append(statements.count)
            statements += replaceStatements(Array(group), previous: previous)
        }
        let results: [[PostgresRow]]
        do throws(PostgresSession.PostgresFailure) {
            results = try tx.pipeline(statements)
        } catch {
            throw tx.map(error)
        }
        var found = Set<UUID>()
        for index in updates {
            for row in results[index] { found.insert(try decode(row, UUID.self)) }
        }
        return found
    }

    /// The statements of `replaceRows` for one group: the UPDATE of the record rows (returning the
    /// ids found), then the field rows' deletes and inserts.
    private func replaceStatements(_ records: [StoredRecord], previous: [UUID: StoredRecord]) -> [(String, PostgresBindings)] {
        let c = Columns(records, previous: previous)
        let update = """
            UPDATE \(tables.records) AS r
            SET collection = u.collection, keying = u.keying, key_id = NULLIF(u.key_id, -1), fts = u.fts::tsvector, mac = \(Self.macColumn)
            FROM unnest($1::uuid[], $2::text[], $3::int2[], $4::int8[], $5::text[], $6::bytea[]) AS u(id, collection, keying, key_id, fts, mac)
            WHERE r.id = u.id
            RETURNING r.id
            """
        return [(update, Self.recordBinds(c))] + fieldDeletes(c.rewritten) + fieldInserts(c)
    }

    /// `RecordStorage.delete`, in one transaction.
    public func delete(_ id: UUID) throws(RecordsError) -> Bool {
        try write { (tx) throws(RecordsError) in
            let deleted = try run(tx, "DELETE FROM \(tables.records) WHERE id = $1 RETURNING 1", Self.binds { $0.append(id) })
            guard !deleted.isEmpty else { return false }
            do throws(PostgresSession.PostgresFailure) { _ = try tx.pipeline(fieldDeletes(([id], [id], [id]))) } catch { throw tx.map(error) }
            return true
        }
    }

    // MARK: Reading

    static let recordColumns = "r.id, r.collection, r.keying, r.key_id, r.mac"

    /// Turns record rows (`recordColumns`, in order) into records, loading their fields.
    func load(_ rows: [PostgresRow], _ tx: Transaction) throws(RecordsError) -> [StoredRecord] {
        guard !rows.isEmpty else { return [] }
        var records: [StoredRecord] = []
        records.reserveCapacity(rows.count)
        var position: [UUID: Int] = [:]
        for row in rows {
            let (id, collection, keying, keyId, mac) = try decode(row, (UUID, String, Int16, Int64?, ByteBuffer?).self)
            position[id] = records.count
            records.append(StoredRecord(
                id: id, collection: collection, keying: keying == 0 ? .storeKey : .password,
                keyId: try keyId.map { (keyId) throws(RecordsError) in try WrappedStoreKey.id(stored: keyId, in: "\(configuration.displayName): record \(id)") },
                clear: [:], sealed: [:], blindIndexes: [:], mac: mac.map(Self.data)))
        }
        let ids = records.map(\.id)
        let t = tables
        let fields: [[PostgresRow]]
        do throws(PostgresSession.PostgresFailure) {
            fields = try tx.pipeline([
                ("SELECT record_id, name, kind, value FROM \(t.clearFields) WHERE record_id = ANY($1::uuid[])", Self.binds { $0.append(ids) }),
                ("SELECT record_id, name, sealed FROM \(t.sealedFields) WHERE record_id = ANY($1::uuid[])", Self.binds { $0.append(ids) }),
                ("SELECT record_id, name, token FROM \(t.blindIndexes) WHERE record_id = ANY($1::uuid[])", Self.binds { $0.append(ids) }),
            ])
        } catch {
            throw tx.map(error)
        }
        for row in fields[0] {
            let (id, name, kind, value) = try decode(row, (UUID, String, Int16, ByteBuffer).self)
            guard let i = position[id] else { continue }
            records[i].clear[name] = kind == 1 ? .string(String(buffer: value)) : .bytes(Self.data(value))
        }
        for row in fields[1] {
            let (id, name, sealed) = try decode(row, (UUID, String, ByteBuffer).self)
            if let i = position[id] { records[i].sealed[name] = Self.data(sealed) }
        }
        for row in fields[2] {
            let (id, name, token) = try decode(row, (UUID, String, ByteBuffer).self)
            if let i = position[id] { records[i].blindIndexes[name] = Self.data(token) }
        }
        return records
    }

    /// `RecordStorage.record`, in one transaction.
    public func record(_ id: UUID) throws(RecordsError) -> StoredRecord? {
        try read { (tx) throws(RecordsError) in
            try load(try run(tx, "SELECT \(Self.recordColumns) FROM \(tables.records) r WHERE r.id = $1", Self.binds { $0.append(id) }), tx).first
        }
    }

    /// `RecordStorage.records(withKeyIdOtherThan:after:limit:)`, in one transaction. Walks the
    /// primary key (`seq`) from the position; the conditions filter the rows met.
    public func records(withKeyIdOtherThan keyId: UInt32, after position: Int64, limit: Int) throws(RecordsError)
        -> (records: [StoredRecord], last: Int64)
    {
        try page(
            "SELECT seq FROM \(tables.records) WHERE seq > $1 AND ((key_id IS NOT NULL AND key_id <> $3) OR (key_id IS NULL AND keying = 0)) ORDER BY seq LIMIT $2",
            after: position, limit: limit
        ) { $0.append(Int64(keyId)) }
    }

    /// `RecordStorage.allRecords(after:limit:)`, in one transaction.
    public func allRecords(after position: Int64, limit: Int) throws(RecordsError) -> (records: [StoredRecord], last: Int64) {
        try page("SELECT seq FROM \(tables.records) WHERE seq > $1 ORDER BY seq LIMIT $2", after: position, limit: limit)
    }

    /// The records of the `seq`s `query` selects (`$1` the position, `$2` the limit, others bound
    /// by `bind`), in one transaction, and the last `seq` (`position` when none).
    private func page(
        _ query: String, after position: Int64, limit: Int, bind: (inout PostgresBindings) -> Void = { _ in }
    ) throws(RecordsError) -> (records: [StoredRecord], last: Int64) {
        var binds = Self.binds {
            $0.append(position)
            $0.append(Int64(max(0, limit)))
        }
        bind(&binds)
        let bound = binds
        return try read { (tx) throws(RecordsError) in
            var seqs: [Int64] = []
            for row in try run(tx, query, bound) { seqs.append(try decode(row, Int64.self)) }
            guard Self.page(seqs, follows: position, limit: limit) else {
                throw .storage(StorageFailure(
                    .malformedStorage, "\(configuration.displayName): the server's page of records does not follow position \(position)"))
            }
            let rows = try run(
                tx, "SELECT \(Self.recordColumns) FROM \(tables.records) r WHERE r.seq = ANY($1::int8[]) ORDER BY r.seq",
                Self.binds { $0.append(seqs) })
            return (try load(rows, tx), seqs.last ?? position)
        }
    }

    /// Whether a page's `seq`s, as the server answered, are at most `limit`, in increasing order
    /// and all after `position`: each page must move past the one before, or a server (or proxy)
    /// answering the same page again would keep a rotation or an export paging forever.
    package static func page(_ seqs: [Int64], follows position: Int64, limit: Int) -> Bool {
        seqs.count <= max(0, limit) && zip([position] + seqs, seqs).allSatisfy { $0 < $1 }
    }

    /// The smallest byte string greater than every string starting with `prefix`, or nil (all 0xFF).
    static func successor(of prefix: Data) -> Data? {
        var bytes = Array(prefix)
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return Data(bytes)
            }
            bytes.removeLast()
        }
        return nil
    }

    /// `RecordStorage.search`, in one transaction. Equality and prefix use the clear-value index
    /// (first 256 bytes, then the whole value compared), blind-index equality the token index, full
    /// text the GIN index on `fts` (the FTS5 query translated by `PostgresFullText`).
    public func search(_ query: StorageQuery) throws(RecordsError) -> [StoredRecord] {
        let t = tables
        var binds = PostgresBindings()
        func placeholder<V: PostgresDynamicTypeEncodable>(_ value: V) -> String {
            binds.append(value)
            return "$\(binds.count)"
        }
        let limit = Tables.indexedValueBytes
        // Names in every spelling a store written by an earlier version may hold (`RecordNames`).
        func names(_ name: String) -> String { "ANY(\(placeholder(RecordNames.spellings(of: name)))::text[])" }
        var sql = "SELECT \(Self.recordColumns) FROM \(t.records) r WHERE r.collection = \(names(query.collection))"
        for (field, value) in query.equals {
            let bytes = value.data
            let kind: Int16 = value.string == nil ? 2 : 1
            sql += " AND r.id IN (SELECT record_id FROM \(t.clearFields) WHERE name = \(names(field)) AND kind = \(placeholder(kind))"
                + " AND substring(value from 1 for \(limit)) = \(placeholder(Self.buffer(bytes.prefix(limit))))"
                + " AND value = \(placeholder(Self.buffer(bytes))))"
        }
        for (field, prefix) in query.prefixes {
            let bytes = Data(prefix.utf8)
            let head = bytes.prefix(limit)
            sql += " AND r.id IN (SELECT record_id FROM \(t.clearFields) WHERE name = \(names(field)) AND kind = 1"
                + " AND substring(value from 1 for \(limit)) >= \(placeholder(Self.buffer(head)))"
            if let upper = Self.successor(of: head) {
                sql += " AND substring(value from 1 for \(limit)) < \(placeholder(Self.buffer(upper)))"
            }
            sql += " AND substring(value from 1 for \(bytes.count)) = \(placeholder(Self.buffer(bytes))))"
        }
        for (field, tokens) in query.blindIndexes {
            guard !tokens.isEmpty else { return [] }
            let alternatives = tokens.map { token in
                "SELECT record_id FROM \(t.blindIndexes) WHERE token = \(placeholder(Self.buffer(token.token)))"
                    + " AND name = \(placeholder(field)) AND key_id = \(placeholder(Int64(token.keyId)))"
            }
            sql += " AND r.id IN (" + alternatives.joined(separator: " UNION ALL ") + ")"
        }
        if let fullText = query.fullText {
            sql += " AND r.fts @@ \(placeholder(try PostgresFullText.tsquery(fullText)))::tsquery"
        }
        sql += " ORDER BY r.seq"
        let statement = sql
        let bound = binds
        return try read { (tx) throws(RecordsError) in try load(try run(tx, statement, bound), tx) }
    }
}
