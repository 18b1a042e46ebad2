import Foundation
import SecureVault
import Testing

/// Pins the answer normalization exactly as docs/FORMATS.md ("Text rules") specifies it, including
/// where Foundation's case folding departs from Unicode's CaseFolding.txt and which Unicode version
/// its data has. A toolchain whose Foundation changes any of this changes the recovery passphrase of
/// existing vaults, so these tests must fail then (and the format document must be revisited).
@Suite struct AnswerNormalizationSpecTests {
    @Test(arguments: [
        // Full case folding (CaseFolding.txt statuses C and F), per code point, without context.
        ("\u{DF}", "ss"), ("\u{1E9E}", "ss"), ("\u{130}", "i\u{307}"), ("\u{3C2}", "\u{3C3}"),
        ("\u{39F}\u{394}\u{39F}\u{3A3}", "\u{3BF}\u{3B4}\u{3BF}\u{3C3}"),
        ("\u{390}", "\u{390}"),  // folds to U+03B9 U+0308 U+0301, which the second NFKC recomposes
        ("\u{212A}", "k"), ("\u{1C5}", "d\u{17E}"),
        // Departures from CaseFolding.txt: Cherokee folds to its lowercase letters, and U+1C80..U+1C88
        // (Cyrillic small letter variants) stay as they are.
        ("\u{13A0}", "\u{AB70}"), ("\u{AB70}", "\u{AB70}"), ("\u{13F0}", "\u{13F8}"), ("\u{13F8}", "\u{13F8}"),
        ("\u{1C80}", "\u{1C80}"), ("\u{1C88}", "\u{1C88}"),
        // NFKC with Unicode 15 data (U+1E030, new in 15.0, decomposes) ...
        ("\u{1E030}", "\u{430}"), ("\u{FB01}", "fi"), ("\u{FF32}\u{FF45}\u{FF58}", "rex"), ("e\u{301}", "\u{E9}"),
        // ... and no Unicode 16.0 data: these characters (and their case pairs, compositions and
        // compatibility decompositions added in 16.0) are left as they are.
        ("\u{A7DC}", "\u{A7DC}"), ("\u{1C89}", "\u{1C89}"), ("\u{1CCD6}", "\u{1CCD6}"),
        ("\u{113C2}\u{113C2}", "\u{113C2}\u{113C2}"), ("\u{113C5}", "\u{113C5}"),
    ])
    func foldingAndNormalization(answer: String, normalized: String) {
        #expect(Array(SecurityAnswers.normalize(answer).unicodeScalars) == Array(normalized.unicodeScalars))
    }

    /// Every White_Space code point separates words; U+200B (not White_Space) does not; a
    /// whitespace grapheme cluster goes with the marks attached to it.
    @Test func whitespace() {
        let whiteSpace: [UInt32] = [
            0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
            0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
        ]
        for value in whiteSpace {
            let space = String(Unicode.Scalar(value)!)
            #expect(SecurityAnswers.normalize(space + "x" + space + space + "y" + space) == "x y", "U+\(String(value, radix: 16))")
        }
        #expect(Array(SecurityAnswers.normalize("\u{200B}x\u{200B}").unicodeScalars) == ["\u{200B}", "x", "\u{200B}"])
        #expect(SecurityAnswers.normalize("a \u{301}b") == "a b")
        #expect(SecurityAnswers.normalize("a\r\nb") == "a b")
    }

    @Test func passphraseBytes() throws {
        let expected: [UInt8] = Array("SFVA".utf8) + [0, 0, 0, 2] + [0, 0, 0, 10] + Array("elm street".utf8)
            + [0, 0, 0, 3] + Array("rex".utf8)
        #expect(try SecurityAnswers.passphrase(["  Elm\u{3000}STREET ", "\u{FF32}ex"]) == expected)
    }
}
