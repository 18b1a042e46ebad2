/// A domain name as a sequence of labels (RFC 1035 §3.1), each 1 to 63 arbitrary bytes, at most 255
/// bytes in wire form. Labels are kept as raw bytes because DNS-SD instance names are UTF-8 and may
/// contain dots (RFC 6763 §4.3).
///
/// Equality and hashing ignore ASCII case, as DNS name comparison requires (RFC 1035 §2.3.3,
/// RFC 6762 §16); bytes outside ASCII compare exactly.
public struct DNSName: Hashable, Sendable, CustomStringConvertible {
    /// The longest label, in bytes.
    public static let maximumLabelLength = 63
    /// The longest name in wire form (length bytes, labels and the root byte), in bytes.
    public static let maximumWireLength = 255

    /// The labels, most specific first; the root (empty) name has none.
    public let labels: [[UInt8]]

    /// The root name `.`.
    public static let root = DNSName(unchecked: [])

    /// Builds a name from labels, checking that each is 1 to 63 bytes and that the whole fits in
    /// 255 bytes of wire form.
    public init(labels: [[UInt8]]) throws(DNSError) {
        var length = 1
        for label in labels {
            guard (1...Self.maximumLabelLength).contains(label.count) else { throw .invalidLabelLength(label.count) }
            length += label.count + 1
        }
        guard length <= Self.maximumWireLength else { throw .nameTooLong(length: length) }
        self.labels = labels
    }

    init(unchecked labels: [[UInt8]]) {
        self.labels = labels
    }

    /// Parses presentation form: labels separated by `.`, an optional trailing `.`, `\.` and `\\`
    /// for a literal dot or backslash inside a label, and `\DDD` (three decimal digits) for any byte.
    /// Non-ASCII characters are taken as their UTF-8 bytes.
    public init(_ text: String) throws(DNSError) {
        if text == "." || text.isEmpty {
            self = .root
            return
        }
        var labels = [[UInt8]]()
        var current = [UInt8]()
        let bytes = Array(text.utf8)
        var index = 0
        var sawEnd = false
        while index < bytes.count {
            let byte = bytes[index]
            if sawEnd { throw .invalidName("characters after the final dot") }
            switch byte {
            case UInt8(ascii: "."):
                guard !current.isEmpty else { throw .invalidName("empty label in \"\(text)\"") }
                labels.append(current)
                current = []
                if index == bytes.count - 1 { sawEnd = true }
                index += 1
            case UInt8(ascii: "\\"):
                guard index + 1 < bytes.count else { throw .invalidName("dangling escape in \"\(text)\"") }
                let next = bytes[index + 1]
                if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(next) {
                    guard index + 3 < bytes.count,
                        let value = Int(String(decoding: bytes[(index + 1)...(index + 3)], as: UTF8.self)),
                        value <= 255,
                        bytes[(index + 1)...(index + 3)].allSatisfy({ (48...57).contains($0) })
                    else { throw .invalidName("bad \\DDD escape in \"\(text)\"") }
                    current.append(UInt8(value))
                    index += 4
                } else {
                    current.append(next)
                    index += 2
                }
            default:
                current.append(byte)
                index += 1
            }
        }
        if !current.isEmpty { labels.append(current) }
        try self.init(labels: labels)
    }

    /// The number of bytes the name takes in uncompressed wire form.
    public var wireLength: Int { labels.reduce(1) { $0 + $1.count + 1 } }

    /// Presentation form with a trailing dot. A `.` or `\` inside a label is escaped with `\`, and
    /// bytes below 0x20, 0x7F, and bytes that are not valid UTF-8 are written as `\DDD`.
    public var description: String {
        if labels.isEmpty { return "." }
        return labels.map(Self.escape).joined(separator: ".") + "."
    }

    /// One label in presentation form, escaped as `description` does.
    public static func escape(_ label: [UInt8]) -> String {
        var out = ""
        let decoded = decodeUTF8(label)
        if let decoded {
            for scalar in decoded.unicodeScalars {
                switch scalar.value {
                case 0x2E: out += "\\."
                case 0x5C: out += "\\\\"
                case 0..<0x20, 0x7F: out += "\\" + Self.threeDigits(UInt8(scalar.value))
                default: out.unicodeScalars.append(scalar)
                }
            }
        } else {
            for byte in label {
                switch byte {
                case 0x2E: out += "\\."
                case 0x5C: out += "\\\\"
                case 0x21...0x7E, 0x20: out.unicodeScalars.append(Unicode.Scalar(byte))
                default: out += "\\" + Self.threeDigits(byte)
                }
            }
        }
        return out
    }

    private static func threeDigits(_ byte: UInt8) -> String {
        let digits = String(byte)
        return String(repeating: "0", count: 3 - digits.count) + digits
    }

    /// A name with `label` in front of this one.
    public func prepending(_ label: [UInt8]) throws(DNSError) -> DNSName {
        try DNSName(labels: [label] + labels)
    }

    /// True when this name equals `suffix` or ends with all of its labels (ASCII case ignored).
    public func hasSuffix(_ suffix: DNSName) -> Bool {
        guard suffix.labels.count <= labels.count else { return false }
        for (a, b) in zip(labels.suffix(suffix.labels.count), suffix.labels) where !Self.labelsEqual(a, b) { return false }
        return true
    }

    /// The labels folded to ASCII lower case, the form compression and canonical ordering use.
    var canonicalLabels: [[UInt8]] { labels.map(Self.lowercased) }

    static func lowercased(_ label: [UInt8]) -> [UInt8] {
        label.map(folded)
    }

    private static func folded(_ byte: UInt8) -> UInt8 {
        (65...90).contains(byte) ? byte | 0x20 : byte
    }

    /// Byte-equal after ASCII case folding, compared in place: names are compared for every
    /// record a hostile response brings, so equality and hashing allocate nothing.
    private static func labelsEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) where folded(x) != folded(y) { return false }
        return true
    }

    /// Equal when the label counts match and each label is byte-equal after ASCII case folding.
    public static func == (lhs: DNSName, rhs: DNSName) -> Bool {
        guard lhs.labels.count == rhs.labels.count else { return false }
        for (a, b) in zip(lhs.labels, rhs.labels) where !labelsEqual(a, b) { return false }
        return true
    }

    /// Hashes the ASCII-lower-cased labels, consistent with `==`: each label's length and bytes,
    /// eight to a word (the hasher takes a word for the price of a byte).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(labels.count)
        for label in labels {
            var word = UInt64(label.count)
            var bytesInWord = 1
            for byte in label {
                if bytesInWord == 8 {
                    hasher.combine(word)
                    word = 0
                    bytesInWord = 0
                }
                word = word << 8 | UInt64(Self.folded(byte))
                bytesInWord += 1
            }
            hasher.combine(word)
        }
    }

    /// Compares names in the canonical order of RFC 4034 §6.1 restricted to what mDNS tie-breaking
    /// needs: byte-wise on lower-cased labels, from the root.
    static func canonicalLess(_ lhs: DNSName, _ rhs: DNSName) -> Bool {
        let a = lhs.canonicalLabels.reversed(), b = rhs.canonicalLabels.reversed()
        for (x, y) in zip(a, b) where x != y { return x.lexicographicallyPrecedes(y) }
        return a.count < b.count
    }
}

/// Strict UTF-8 decoding (nil on any invalid sequence), without the newer-OS-only
/// `String(validating:as:)`.
func decodeUTF8(_ bytes: some Sequence<UInt8>) -> String? {
    var result = String.UnicodeScalarView()
    var decoder = UTF8()
    var iterator = bytes.makeIterator()
    while true {
        switch decoder.decode(&iterator) {
        case .scalarValue(let scalar): result.append(scalar)
        case .emptyInput: return String(result)
        case .error: return nil
        }
    }
}
