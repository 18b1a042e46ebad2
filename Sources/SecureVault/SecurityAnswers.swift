import Foundation

/// How security questions and answers become key-derivation input (docs/FORMATS.md).
///
/// Answers are normalized so that how a person types the same answer does not matter: Unicode
/// NFKC, case folded, trimmed, inner whitespace runs collapsed to one space. They are then combined
/// with length prefixes, so `["ab", "c"]` and `["a", "bc"]` give different inputs.
public enum SecurityAnswers {
    /// The normal form of one answer (NFKC, case folded, trimmed, inner whitespace collapsed).
    public static func normalize(_ answer: String) -> String {
        let folded = answer.precomposedStringWithCompatibilityMapping
            .folding(options: [.caseInsensitive], locale: nil)
            .precomposedStringWithCompatibilityMapping
        return folded.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }

    /// The passphrase derived from `answers`: `"SFVA" || u32be(count) || (u32be(len) || UTF-8)*` of
    /// the normalized answers. Throws `invalidSecret` when there are none or one is blank.
    public static func passphrase(_ answers: [String]) throws(VaultError) -> [UInt8] {
        let normalized = answers.map(normalize)
        guard !normalized.isEmpty else { throw .invalidSecret("at least one answer is needed") }
        guard !normalized.contains(where: \.isEmpty) else { throw .invalidSecret("an answer is blank") }
        return lengthPrefixed(normalized, magic: "SFVA")
    }

    /// `magic || u32be(count) || (u32be(len) || UTF-8)*`: an injective encoding of a string list.
    static func lengthPrefixed(_ strings: [String], magic: String) -> [UInt8] {
        var bytes = Array(magic.utf8)
        appendLength(strings.count, to: &bytes)
        for string in strings {
            appendLength(string.utf8.count, to: &bytes)
            bytes.append(contentsOf: string.utf8)
        }
        return bytes
    }

    static func appendLength(_ count: Int, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(count).bigEndian) { bytes.append(contentsOf: $0) }
    }
}
