import Foundation

/// Lowercase hexadecimal encoding.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Lowercase hex of `bytes`.
    public static func encode<D: DataProtocol>(_ bytes: D) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes hex (either case). Throws `malformedEncoding` on odd length or a non-hex character.
    public static func decode(_ text: String) throws(SecureCoreError) -> Data {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { throw SecureCoreError.malformedEncoding("hex has an odd number of digits") }
        var out = Data(capacity: utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let hi = value(utf8[i]), let lo = value(utf8[i + 1]) else {
                throw SecureCoreError.malformedEncoding("invalid hex digit at offset \(i)")
            }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Standard base64 (RFC 4648 §4) with padding, decoded strictly: only canonical encodings are accepted.
public enum Base64 {
    /// Padded standard base64.
    public static func encode<D: DataProtocol>(_ bytes: D) -> String {
        Data(bytes).base64EncodedString()
    }

    /// Decodes padded standard base64. Rejects whitespace, missing padding and non-zero pad bits.
    /// Throws `SecureCoreError.malformedEncoding`.
    public static func decode(_ text: String) throws(SecureCoreError) -> Data {
        guard let data = Data(base64Encoded: text), data.base64EncodedString() == text else {
            throw SecureCoreError.malformedEncoding("not canonical base64")
        }
        return data
    }
}

/// base64url (RFC 4648 §5) without padding, decoded strictly (canonical form only).
public enum Base64URL {
    /// Unpadded base64url.
    public static func encode<D: DataProtocol>(_ bytes: D) -> String {
        var s = Base64.encode(bytes)
        while s.last == "=" { s.removeLast() }
        return String(s.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    /// Decodes unpadded base64url. Rejects padding, `+`, `/`, whitespace and non-zero pad bits.
    /// Throws `SecureCoreError.malformedEncoding`.
    public static func decode(_ text: String) throws(SecureCoreError) -> Data {
        guard !text.contains("="), !text.contains("+"), !text.contains("/"), text.utf8.count % 4 != 1 else {
            throw SecureCoreError.malformedEncoding("not canonical unpadded base64url")
        }
        var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        do {
            return try Base64.decode(standard)
        } catch {
            throw SecureCoreError.malformedEncoding("not canonical unpadded base64url")
        }
    }
}

/// PEM text encoding, RFC 7468 strict form: `-----BEGIN LABEL-----`, base64 lines of exactly 64
/// characters (the last 1–64), `-----END LABEL-----`. Lines end in LF or CRLF.
public enum PEM {
    /// One decoded PEM block.
    public struct Document: Sendable, Equatable {
        /// The label between `BEGIN ` and `-----`, for example `PRIVATE KEY`.
        public let label: String
        /// The decoded contents.
        public let der: Data

        /// A block with label `label` and contents `der`, taken as given.
        public init(label: String, der: Data) {
            self.label = label
            self.der = der
        }
    }

    /// The strict PEM text for `der` under `label`, ending in a newline.
    public static func encode<D: DataProtocol>(_ der: D, label: String) -> String {
        let body = Base64.encode(der)
        var text = "-----BEGIN \(label)-----\n"
        var index = body.startIndex
        while index < body.endIndex {
            let end = body.index(index, offsetBy: 64, limitedBy: body.endIndex) ?? body.endIndex
            text += body[index..<end] + "\n"
            index = end
        }
        return text + "-----END \(label)-----\n"
    }

    /// Parses exactly one strict PEM block, optionally surrounded by blank lines. When
    /// `expectedLabel` is given, a different label is an error.
    public static func decode(_ text: String, expectedLabel: String? = nil) throws(SecureCoreError) -> Document {
        // "\r\n" is one Character in Swift, so normalize line ends before splitting. A slice, so
        // that dropping a million blank lines before the block is a million steps, not 10^12 moves.
        var lines = text.replacingOccurrences(of: "\r\n", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false)[...]
        while lines.last?.isEmpty == true { lines.removeLast() }
        while lines.first?.isEmpty == true { lines.removeFirst() }
        guard lines.count >= 2 else { throw SecureCoreError.malformedEncoding("PEM: missing BEGIN or END line") }
        let first = lines.first!, last = lines.last!
        let begin = "-----BEGIN ", end = "-----END ", dashes = "-----"
        guard first.hasPrefix(begin), first.hasSuffix(dashes), first.count >= begin.count + dashes.count else {
            throw SecureCoreError.malformedEncoding("PEM: first line is not a BEGIN line")
        }
        let label = String(first.dropFirst(begin.count).dropLast(dashes.count))
        guard isValidLabel(label) else { throw SecureCoreError.malformedEncoding("PEM: invalid label") }
        guard last == end + label + dashes else {
            throw SecureCoreError.malformedEncoding("PEM: END line does not match BEGIN label \(label)")
        }
        if let expectedLabel, expectedLabel != label {
            throw SecureCoreError.malformedEncoding("PEM: expected label \(expectedLabel), found \(label)")
        }
        let body = lines.dropFirst().dropLast()
        for (i, line) in body.enumerated() {
            let isLast = i == body.count - 1
            guard isLast ? (1...64).contains(line.utf8.count) : line.utf8.count == 64 else {
                throw SecureCoreError.malformedEncoding("PEM: base64 line \(i + 1) has the wrong length")
            }
        }
        do {
            return Document(label: label, der: try Base64.decode(body.joined()))
        } catch {
            throw SecureCoreError.malformedEncoding("PEM: body is not canonical base64")
        }
    }

    /// RFC 7468 `label`: printable ASCII except `-`, with single spaces or hyphens between words.
    private static func isValidLabel(_ label: String) -> Bool {
        if label.isEmpty { return true }
        var previousWasSeparator = true
        for scalar in label.unicodeScalars {
            let isSeparator = scalar == " " || scalar == "-"
            if isSeparator {
                if previousWasSeparator { return false }
            } else if !(0x21...0x7e).contains(scalar.value) {
                return false
            }
            previousWasSeparator = isSeparator
        }
        return !previousWasSeparator
    }
}
