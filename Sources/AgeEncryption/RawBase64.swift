import Foundation
import SecureCore

/// The base64 of the age header: RFC 4648 §4 without `=` padding, canonical only. A thin layer over
/// SecureCore's strict padded `Base64`, which already rejects non-canonical encodings.
enum RawBase64 {
    /// Unpadded standard base64 of `bytes`.
    static func encode(_ bytes: some DataProtocol) -> String {
        var text = Base64.encode(bytes)
        while text.last == "=" { text.removeLast() }
        return text
    }

    /// Decodes unpadded canonical base64; nil for padding, characters outside the alphabet,
    /// impossible lengths, or non-zero trailing bits.
    static func decode(_ text: some StringProtocol) -> Data? {
        let utf8 = text.utf8
        guard utf8.count % 4 != 1, utf8.allSatisfy(isAlphabet) else { return nil }
        let padded = String(text) + String(repeating: "=", count: (4 - utf8.count % 4) % 4)
        return try? Base64.decode(padded)
    }

    /// A character of the standard base64 alphabet (no padding).
    static func isAlphabet(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
            true
        default: false
        }
    }
}
