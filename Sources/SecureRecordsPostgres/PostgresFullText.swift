import SecureRecords

/// Full-text search on PostgreSQL over the terms the client indexes (`FullText`), the same terms
/// SQLite's index holds: PostgreSQL's own parser and dictionaries are never used.
///
/// The stored `fts` column is the `tsvector` of a record's indexed terms with their positions, and
/// a query (`FullTextQuery`) becomes a `tsquery` literal over the same terms
/// (docs/FORMATS.md, "Full-text search").
public enum PostgresFullText {
    /// The `tsvector` literal of `text`'s indexed terms: each quoted, with its positions.
    public static func tsvector(_ text: String) -> String {
        lexemes(text).map { quote($0.term) + ":" + $0.positions.map(String.init).joined(separator: ",") }.joined(separator: " ")
    }

    /// `text`'s distinct indexed terms in order of first occurrence, each with its positions
    /// (1-based, ascending).
    static func lexemes(_ text: String) -> [(term: String, positions: [Int])] {
        let indexed = FullText.numberedTerms(text)
        var positions = [[Int]](repeating: [], count: indexed.terms.count)
        for (index, number) in indexed.positions.enumerated() {
            if let number { positions[number].append(index + 1) }
        }
        return Array(zip(indexed.terms, positions))
    }

    /// The `tsquery` literal of the full-text query `query`, or `invalidQuery`.
    public static func tsquery(_ query: String) throws(RecordsError) -> String {
        tsquery(try FullTextQuery(query).expression)
    }

    static func tsquery(_ expression: FullTextQuery.Expression) -> String {
        switch expression {
        case .phrase(let terms, let prefix):
            var parts = terms.map(quote)
            if prefix, let last = parts.popLast() { parts.append(last + ":*") }
            return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: " <-> ") + ")"
        case .and:
            return "(" + expression.operands(ofAnd: true).map(tsquery).joined(separator: " & ") + ")"
        case .or:
            return "(" + expression.operands(ofAnd: false).map(tsquery).joined(separator: " | ") + ")"
        case .not(let a, let b):
            return "(\(tsquery(a)) & !\(tsquery(b)))"
        }
    }

    /// A term as a `tsvector`/`tsquery` lexeme literal (terms hold no quote or backslash; escaped
    /// all the same).
    static func quote(_ term: String) -> String {
        guard term.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "'") }) else { return "'" + term + "'" }
        return "'" + term.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "''") + "'"
    }
}
