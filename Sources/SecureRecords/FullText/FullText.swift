import Foundation

/// Full-text indexing, the same on every backend: the client turns text into terms, and SQLite and
/// PostgreSQL index exactly those terms (docs/FORMATS.md, "Full-text search"). Neither backend's
/// own tokenizer or folding is used, so a query finds the same records on both.
///
/// A token is a maximal run of letters, numbers, marks and private-use characters of the text's
/// compatibility decomposition (NFKD: `Ⓐ` is `A`, `ﬁ` is `fi`, full-width forms are plain), except
/// that each Han ideograph, kana and other symbol (`So`: emoji, dingbats) is a token of its own, so
/// Chinese and Japanese, written without spaces, are searched as phrases of characters. Every other
/// character separates tokens. A token is folded: nonspacing marks (diacritics, vowel points) are
/// removed, each character is lowercased, `ς` becomes `σ` and `ß` becomes `ss`, and the result is
/// put in NFC.
public enum FullText {
    /// Tokens longer than this many UTF-8 bytes are not indexed (PostgreSQL's lexeme limit is 2,047).
    public static let maximumTokenBytes = 2_000
    /// Occurrences of one term indexed per text (PostgreSQL keeps 256 positions per lexeme); later
    /// occurrences leave their position empty.
    public static let maximumPositionsPerTerm = 256
    /// Terms indexed per text (PostgreSQL's largest position); later terms are not indexed.
    public static let maximumTerms = 16_383
    /// The estimated size of a text's index entry, in bytes, past which later terms are not indexed
    /// (PostgreSQL refuses a `tsvector` over 1 MiB).
    public static let maximumIndexBytes = 1_000_000

    /// The folded tokens of `text`, in order.
    public static func tokens(_ text: String) -> [String] {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return asciiTokens(text) }
        var result: [String] = []
        var current = String.UnicodeScalarView()
        func flush() {
            defer { current = String.UnicodeScalarView() }
            guard let folded = fold(current) else { return }
            result.append(folded)
        }
        for scalar in text.decomposedStringWithCompatibilityMapping.unicodeScalars {
            switch kind(of: scalar) {
            case .separator:
                flush()
            case .runPart:
                current.append(scalar)
            case .single:
                flush()
                current.append(scalar)
                flush()
            }
        }
        flush()
        return result
    }

    /// The terms indexed for `text`: term `i` is at position `i + 1`; nil leaves that position
    /// empty (an occurrence past `maximumPositionsPerTerm`). At most `maximumTerms`, stopping early
    /// when the entry would pass `maximumIndexBytes`.
    public static func indexedTerms(_ text: String) -> [String?] {
        let indexed = numberedTerms(text)
        return indexed.positions.map { $0.map { indexed.terms[$0] } }
    }

    /// `indexedTerms` as its distinct terms, in order of first occurrence, and for each position
    /// the number of its term in `terms` (nil for an empty position): a term's positions without
    /// grouping the terms again.
    package static func numberedTerms(_ text: String) -> (terms: [String], positions: [Int?]) {
        var terms: [String] = []
        var occurrences: [Int] = []
        var positions: [Int?] = []
        // A text's few distinct terms are found by a linear scan, without hashing each token;
        // past 32 of them, by a dictionary.
        var numbers: [String: Int]?
        var bytes = 0
        for token in tokens(text) {
            guard positions.count < maximumTerms else { break }
            let known = numbers.map { $0[token] } ?? terms.firstIndex(of: token)
            let seen = known.map { occurrences[$0] } ?? 0
            // PostgreSQL: a lexeme's entry, its text and a 2-byte count (8 bytes with alignment),
            // plus 2 bytes per position.
            bytes += (seen == 0 ? 8 + token.utf8.count : 0) + 2
            guard bytes <= maximumIndexBytes else { break }
            let number: Int
            if let known {
                number = known
                occurrences[number] += 1
            } else {
                number = terms.count
                terms.append(token)
                occurrences.append(1)
                if numbers != nil {
                    numbers![token] = number
                } else if terms.count > 32 {
                    numbers = Dictionary(uniqueKeysWithValues: zip(terms, terms.indices))
                }
            }
            positions.append(seen < maximumPositionsPerTerm ? number : nil)
        }
        return (terms, positions)
    }

    /// `tokens` for ASCII text: letters and digits, lowercased (no decomposition or marks to remove).
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

    enum ScalarKind { case separator, runPart, single }

    static func kind(of scalar: Unicode.Scalar) -> ScalarKind {
        let properties = scalar.properties
        switch properties.generalCategory {
        case .otherSymbol:
            return .single
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter:
            return properties.isIdeographic || isKana(scalar) ? .single : .runPart
        case .decimalNumber, .letterNumber, .otherNumber, .nonspacingMark, .spacingMark, .enclosingMark, .privateUse:
            return .runPart
        default:
            return .separator
        }
    }

    /// Hiragana and katakana (after NFKD, half-width katakana are full-width).
    static func isKana(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x3040...0x30FF, 0x31F0...0x31FF, 0x1B000...0x1B16F: true
        default: false
        }
    }

    /// One token folded, or nil when nothing is left or it is too long to index.
    static func fold(_ scalars: String.UnicodeScalarView) -> String? {
        var folded = String.UnicodeScalarView()
        // Lowercasing first: it can add a mark (`İ` is `i` and a combining dot), removed next.
        for scalar in scalars {
            for lowered in scalar.properties.lowercaseMapping.unicodeScalars where lowered.properties.generalCategory != .nonspacingMark {
                switch lowered {
                case "ς": folded.append("σ")
                case "ß": folded.append(contentsOf: "ss".unicodeScalars)
                default: folded.append(lowered)
                }
            }
        }
        guard !folded.isEmpty else { return nil }
        let token = String(folded).precomposedStringWithCanonicalMapping
        return token.utf8.count <= maximumTokenBytes ? token : nil
    }
}
