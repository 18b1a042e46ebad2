/// The limits every full-text query meets, the same on SQLite and PostgreSQL, checked before the
/// query reaches either backend: a query over them is `RecordsError.invalidQuery`, never a crash
/// (the PostgreSQL translator parses recursively; 30,000 nested parentheses overflowed its stack).
public enum FullTextQueryLimits {
    /// The longest query, in UTF-8 bytes.
    public static let maximumBytes = 1_000
    /// The deepest nesting of parentheses outside quoted phrases.
    public static let maximumNesting = 32

    /// Throws `RecordsError.invalidQuery` when `query` is longer than `maximumBytes` or nests
    /// parentheses deeper than `maximumNesting`.
    public static func check(_ query: String) throws(RecordsError) {
        guard query.utf8.count <= maximumBytes else {
            throw .invalidQuery("full-text query: longer than \(maximumBytes) bytes")
        }
        var depth = 0, quoted = false
        for byte in query.utf8 {
            switch byte {
            case UInt8(ascii: "\""): quoted.toggle()  // `""` inside a phrase toggles twice
            case UInt8(ascii: "(") where !quoted:
                depth += 1
                guard depth <= maximumNesting else {
                    throw .invalidQuery("full-text query: parentheses nested deeper than \(maximumNesting)")
                }
            case UInt8(ascii: ")") where !quoted: depth = max(0, depth - 1)
            default: break
            }
        }
    }
}
