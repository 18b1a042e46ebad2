/// A full-text query, parsed once for every backend: its phrases are turned into terms by
/// `FullText.tokens`, as indexed text is, and each backend runs the same expression over the same
/// terms (FTS5 on SQLite, `tsquery` on PostgreSQL).
///
/// The syntax is FTS5's: barewords, `"quoted phrases"` (`""` is a quote inside), a trailing `*`
/// (prefix of the last term), `AND`, `OR`, `NOT` (binary: `a NOT b`), implicit AND between
/// phrases, and parentheses, with FTS5's precedence (NOT, then AND, then OR). `NEAR`, column
/// filters `col:`, `^`, `+` and `{...}` are `RecordsError.invalidQuery`, as is a phrase with no
/// terms and a query over `FullTextQueryLimits`.
public struct FullTextQuery: Sendable, Hashable {
    /// The parsed query.
    package indirect enum Expression: Sendable, Hashable {
        /// Terms in a row; with `prefix`, the last one is a prefix.
        case phrase([String], prefix: Bool)
        case and(Expression, Expression)
        case or(Expression, Expression)
        /// Records matching the first and not the second.
        case not(Expression, Expression)
    }

    /// The query as an expression over indexed terms.
    package let expression: Expression

    /// Parses `query`, or throws `RecordsError.invalidQuery` saying why it cannot be run.
    public init(_ query: String) throws(RecordsError) {
        // Bounds the recursion of the parser, of the renderings and of the tree's deinitialization:
        // at most 1,000 bytes, so a few hundred terms, nested at most 32 deep.
        try FullTextQueryLimits.check(query)
        var parser = Parser(tokens: try Self.lex(query))
        guard !parser.tokens.isEmpty else { throw .invalidQuery("full-text query: the query is empty") }
        let expression = try parser.parseOr()
        guard parser.position == parser.tokens.count else {
            throw .invalidQuery("full-text query: unexpected \(parser.describe(parser.tokens[parser.position]))")
        }
        self.expression = expression
    }

    /// The query in FTS5's syntax over the indexed terms, every phrase quoted. Chains of AND and
    /// of OR are written flat, so FTS5's parser never nests deeper than the query's parentheses.
    package var fts5: String { Self.fts5(expression) }

    private static func fts5(_ expression: Expression) -> String {
        switch expression {
        case .phrase(let terms, let prefix):
            return "\"" + terms.joined(separator: " ") + "\"" + (prefix ? " *" : "")
        case .and:
            return "(" + expression.operands(ofAnd: true).map(fts5).joined(separator: " AND ") + ")"
        case .or:
            return "(" + expression.operands(ofAnd: false).map(fts5).joined(separator: " OR ") + ")"
        case .not(let a, let b):
            return "(\(fts5(a)) NOT \(fts5(b)))"
        }
    }

    /// Whether text with these indexed terms (`FullText.indexedTerms`; nil an empty position)
    /// matches the query, evaluated in memory as both backends evaluate it: a record store checks
    /// a backend's answers with it, so an index rewritten behind its back cannot return a record
    /// that does not match.
    package func matches(_ terms: [String?]) -> Bool { Self.matches(expression, terms) }

    private static func matches(_ expression: Expression, _ terms: [String?]) -> Bool {
        switch expression {
        case .phrase(let phrase, let prefix):
            guard !phrase.isEmpty, phrase.count <= terms.count else { return false }
            return (0...(terms.count - phrase.count)).contains { start in
                phrase.indices.allSatisfy { k in
                    guard let term = terms[start + k] else { return false }
                    return prefix && k == phrase.count - 1
                        ? term.utf8.starts(with: phrase[k].utf8) : term.utf8.elementsEqual(phrase[k].utf8)
                }
            }
        case .and(let a, let b): return matches(a, terms) && matches(b, terms)
        case .or(let a, let b): return matches(a, terms) || matches(b, terms)
        case .not(let a, let b): return matches(a, terms) && !matches(b, terms)
        }
    }

    // MARK: Lexing and parsing

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

    /// FTS5's bareword characters: ASCII letters and digits, `_`, U+001A and everything non-ASCII.
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
                    throw .invalidQuery(
                        "full-text query: '\(Character(c))' is not supported (NEAR, column filters, ^ and + are not; quote punctuation)")
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
                    throw .invalidQuery("full-text query: NEAR is not supported")
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
                let terms = FullText.tokens(text)
                guard !terms.isEmpty else { throw .invalidQuery("full-text query: a phrase has no words") }
                var prefix = false
                if next == .star {
                    prefix = true
                    position += 1
                }
                return .phrase(terms, prefix: prefix)
            default:
                throw .invalidQuery("full-text query: unexpected \(describe(token))")
            }
        }
    }
}

extension FullTextQuery.Expression {
    /// The operands of a chain of ANDs (or of ORs), left to right: both are associative, so
    /// `(a AND b) AND c` and `a AND (b AND c)` are both `a AND b AND c`.
    package func operands(ofAnd: Bool) -> [Self] {
        switch (self, ofAnd) {
        case (.and(let a, let b), true), (.or(let a, let b), false):
            a.operands(ofAnd: ofAnd) + b.operands(ofAnd: ofAnd)
        default:
            [self]
        }
    }
}
