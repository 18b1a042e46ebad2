import Foundation
import SQLiteSupport
import SecureCore

// Searches: exact clear values, prefixes, blind-index tokens and full-text queries (FTS5 over the
// client's terms, `FullTextQuery`), as one SELECT over the index tables.
extension SQLiteRecordStorage {
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
            let match = try FullTextQuery(fullText).fts5
            sql += " AND seq IN (SELECT rowid FROM records_fts WHERE records_fts MATCH ?)"
            binds.append { $0.bind($1, match) }
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
}
