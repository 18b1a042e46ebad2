import Foundation
import SecureRecords

/// Full-text search on PostgreSQL with the same results as SQLite FTS5 (unicode61 tokenizer) for the
/// documented query subset.
///
/// The client tokenizes: a token is a maximal run of Unicode letters, numbers, marks and private-use
/// characters (every other character separates tokens), lowercased and with diacritics removed, as
/// FTS5's default `unicode61` tokenizer does. The stored `fts` column is the `tsvector` of those
/// tokens with their positions (1, 2, ... in `StoredRecord.fullText` order), so PostgreSQL's own
/// parser never splits text differently from SQLite. Queries are translated to a `tsquery` literal
/// over the same tokens (docs/FORMATS.md, "SecureRecords on PostgreSQL").
///
/// Supported FTS5 syntax: barewords, `"quoted phrases"` (`""` is a quote inside), a trailing `*`
/// (prefix of the last token), `AND`, `OR`, `NOT` (binary: `a NOT b`), implicit AND between
/// phrases, and parentheses, with FTS5's precedence (NOT, then AND, then OR). Everything else
/// (`NEAR`, column filters `col:`, `^`, `+`, `{...}`) throws `RecordsError.invalidQuery`.
public enum PostgresFullText {
    /// Tokens longer than this many UTF-8 bytes are not indexed (PostgreSQL's lexeme limit is 2047).
    public static let maximumTokenBytes = 2_000
    /// Positions recorded per token (PostgreSQL keeps at most 256; later ones are dropped).
    public static let maximumPositionsPerToken = 256
    /// The largest position PostgreSQL stores; later tokens share it.
    public static let maximumPosition = 16_383

    /// The tokens of `text`, in order, folded as FTS5's unicode61 tokenizer folds them.
    public static func tokens(_ text: String) -> [String] {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return asciiTokens(text) }
        var result: [String] = []
        var current = String.UnicodeScalarView()
        func flush() {
            guard !current.isEmpty else { return }
            let folded = String(current).lowercased().folding(options: [.diacriticInsensitive], locale: nil)
            if !folded.isEmpty, folded.utf8.count <= maximumTokenBytes { result.append(folded) }
            current = String.UnicodeScalarView()
        }
        for scalar in text.unicodeScalars {
            if isTokenCharacter(scalar) { current.append(scalar) } else { flush() }
        }
        flush()
        return result
    }

    /// `tokens` for ASCII text: letters and digits, lowercased (no folding needed).
    static func asciiTokens(_ text: String) -> [String] {
        var result: [String] = []
        var current: [UInt8] = []
        func flush() {
            if !current.isEmpty, current.count <= maximumTokenBytes { result.append(String(decoding: current, as: UTF8.self)) }
            current.removeAll(keepingCapacity: true)
        }
        for byte in text.utf8 {
            switch byte {
            case 0x30...0x39, 0x61...0x7A: current.append(byte)
            case 0x41...0x5A: current.append(byte | 0x20)
            default: flush()
            }
        }
        flush()
        return result
    }

    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .decimalNumber, .letterNumber, .otherNumber, .nonspacingMark, .spacingMark, .enclosingMark, .privateUse:
            true
        default:
            false
        }
    }

    /// The `tsvector` literal of `text`: each token quoted, with its positions.
    public static func tsvector(_ text: String) -> String {
        var positions: [String: [Int]] = [:]
        var order: [String] = []
        for (index, token) in tokens(text).enumerated() {
            if positions[token] == nil { order.append(token) }
            if positions[token, default: []].count < maximumPositionsPerToken {
                positions[token, default: []].append(min(index + 1, maximumPosition))
            }
        }
        return order.map { token in
            quote(token) + ":" + (positions[token] ?? []).map(String.init).joined(separator: ",")
        }.joined(separator: " ")
    }

    static func quote(_ token: String) -> String {
        "'" + token.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "''") + "'"
    }

    // MARK: Queries

    indirect enum Expression: Equatable {
        case phrase([String], prefix: Bool)
        case and(Expression, Expression)
        case or(Expression, Expression)
        case not(Expression, Expression)

        var tsquery: String {
            switch self {
            case .phrase(let tokens, let prefix):
                var parts = tokens.map(PostgresFullText.quote)
                if prefix, let last = parts.popLast() { parts.append(last + ":*") }
                return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: " <-> ") + ")"
            case .and(let a, let b): return "(\(a.tsquery) & \(b.tsquery))"
            case .or(let a, let b): return "(\(a.tsquery) | \(b.tsquery))"
            case .not(let a, let b): return "(\(a.tsquery) & !\(b.tsquery))"
            }
        }
    }

    enum Token: Equatable {
        case word(String)
        case string(String)
        case star, open, close
        case and, or, not

        var isPhrase: Bool {
            switch self {
            case .word, .string: true
            default: false
            }
        }
    }

    /// The `tsquery` literal equivalent to the FTS5 query `query`, or `invalidQuery`.
    public static func tsquery(_ query: String) throws(RecordsError) -> String {
        // Bounds the recursion of the parser and of `Expression.tsquery` (and the tree's own
        // deinitialization): at most 1,000 bytes, so a few hundred terms, nested at most 32 deep.
        try FullTextQueryLimits.check(query)
        var parser = Parser(tokens: try lex(query))
        guard !parser.tokens.isEmpty else { throw .invalidQuery("full-text query: the query is empty") }
        let expression = try parser.parseOr()
        guard parser.position == parser.tokens.count else {
            throw .invalidQuery("full-text query: unexpected \(parser.describe(parser.tokens[parser.position]))")
        }
        return expression.tsquery
    }

    static func isBarewordCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x5F, 0x1A, 0x80...: true
        default: false
        }
    }

    static func lex(_ query: String) throws(RecordsError) -> [Token] {
        var tokens: [Token] = []
        let scalars = Array(query.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            switch c {
            case " ", "\t", "\n", "\r", "\u{0B}", "\u{0C}":
                i += 1
            case "(":
                tokens.append(.open)
                i += 1
            case ")":
                tokens.append(.close)
                i += 1
            case "*":
                tokens.append(.star)
                i += 1
            case "\"":
                var text = String.UnicodeScalarView()
                i += 1
                var closed = false
                while i < scalars.count {
                    if scalars[i] == "\"" {
                        if i + 1 < scalars.count, scalars[i + 1] == "\"" {
                            text.append("\"")
                            i += 2
                            continue
                        }
                        closed = true
                        i += 1
                        break
                    }
                    text.append(scalars[i])
                    i += 1
                }
                guard closed else { throw .invalidQuery("full-text query: unterminated string") }
                tokens.append(.string(String(text)))
            default:
                guard isBarewordCharacter(c) else {
                    throw .invalidQuery("full-text query: '\(Character(c))' is not supported on PostgreSQL (NEAR, column filters, ^ and + are not)")
                }
                var word = String.UnicodeScalarView()
                while i < scalars.count, isBarewordCharacter(scalars[i]) {
                    word.append(scalars[i])
                    i += 1
                }
                switch String(word) {
                case "AND": tokens.append(.and)
                case "OR": tokens.append(.or)
                case "NOT": tokens.append(.not)
                case "NEAR" where i < scalars.count && scalars[i] == "(":
                    throw .invalidQuery("full-text query: NEAR is not supported on PostgreSQL")
                default: tokens.append(.word(String(word)))
                }
            }
        }
        return tokens
    }

    struct Parser {
        let tokens: [Token]
        var position = 0

        func describe(_ token: Token) -> String {
            switch token {
            case .word(let w): "'\(w)'"
            case .string: "a quoted phrase"
            case .star: "'*'"
            case .open: "'('"
            case .close: "')'"
            case .and: "AND"
            case .or: "OR"
            case .not: "NOT"
            }
        }

        var next: Token? { position < tokens.count ? tokens[position] : nil }

        mutating func parseOr() throws(RecordsError) -> Expression {
            var left = try parseAnd()
            while next == .or {
                position += 1
                left = .or(left, try parseAnd())
            }
            return left
        }

        mutating func parseAnd() throws(RecordsError) -> Expression {
            var left = try parseNot()
            while next == .and {
                position += 1
                left = .and(left, try parseNot())
            }
            return left
        }

        mutating func parseNot() throws(RecordsError) -> Expression {
            var left = try parsePrimary()
            while next == .not {
                position += 1
                left = .not(left, try parsePrimary())
            }
            return left
        }

        /// A parenthesised expression, or phrases side by side (FTS5's implicit AND binds tighter
        /// than NOT and only joins phrases: `a NOT b c` is `a NOT (b AND c)`; `(a) b` is an error).
        mutating func parsePrimary() throws(RecordsError) -> Expression {
            guard let token = next else { throw .invalidQuery("full-text query: it ends where a word was expected") }
            if token == .open {
                position += 1
                let inner = try parseOr()
                guard next == .close else { throw .invalidQuery("full-text query: unbalanced parentheses") }
                position += 1
                return inner
            }
            var list = try parsePhrase()
            while let following = next, following.isPhrase {
                list = .and(list, try parsePhrase())
            }
            return list
        }

        mutating func parsePhrase() throws(RecordsError) -> Expression {
            guard let token = next else { throw .invalidQuery("full-text query: it ends where a word was expected") }
            position += 1
            switch token {
            case .word(let text), .string(let text):
                let words = PostgresFullText.tokens(text)
                guard !words.isEmpty else { throw .invalidQuery("full-text query: a phrase has no words") }
                var prefix = false
                if next == .star {
                    prefix = true
                    position += 1
                }
                return .phrase(words, prefix: prefix)
            default:
                throw .invalidQuery("full-text query: unexpected \(describe(token))")
            }
        }
    }
}
