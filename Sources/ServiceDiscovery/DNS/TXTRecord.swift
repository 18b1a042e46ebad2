/// DNS-SD key/value attributes carried in a TXT record (RFC 6763 §6).
///
/// Reading (`init(strings:)`) follows §6.4 and §6.5: the key is everything before the first `=`, is
/// compared ignoring ASCII case, and only its first occurrence counts; a string without `=` is a
/// boolean attribute; a string with an empty key or a key byte outside printable ASCII is ignored.
/// The values are untrusted bytes from the network.
public struct TXTRecord: Hashable, Sendable {
    /// The most bytes a TXT record built here may take in wire form; RFC 6763 §6.2 recommends
    /// staying under 1300 so the record fits in one packet with the others.
    public static let maximumSize = 1300

    /// One attribute's value.
    public enum Value: Hashable, Sendable {
        /// The key appears without `=` (RFC 6763 §6.4: the attribute is present, with no value).
        case present
        /// The key appears with `=`; the value may be empty and may be any bytes.
        case bytes([UInt8])

        /// The value as UTF-8 text, nil for `present` or bytes that are not valid UTF-8.
        public var string: String? {
            if case .bytes(let bytes) = self { decodeUTF8(bytes) } else { nil }
        }
    }

    /// The attributes in the order they appeared, keys as written (first occurrence only).
    public private(set) var entries: [(key: String, value: Value)]

    /// Creates an empty record (sent as one empty string, RFC 6763 §6.1).
    public init() { entries = [] }

    /// Reads the strings of a TXT record's data. Never throws: malformed strings are skipped as
    /// RFC 6763 §6.4 directs.
    public init(strings: [[UInt8]]) {
        entries = []
        var seen = Set<String>()
        for string in strings where !string.isEmpty {
            let keyBytes = string.prefix { $0 != UInt8(ascii: "=") }
            guard !keyBytes.isEmpty, keyBytes.allSatisfy(Self.isKeyByte) else { continue }
            let key = String(decoding: keyBytes, as: UTF8.self)
            guard seen.insert(key.lowercased()).inserted else { continue }
            let value: Value =
                keyBytes.count == string.count ? .present : .bytes(Array(string[(keyBytes.count + 1)...]))
            entries.append((key, value))
        }
    }

    /// Builds a record from text attributes, in the dictionary's key order sorted for stable output.
    /// Throws `DNSError.invalidTXT` for an empty key, a key with `=` or bytes outside printable
    /// ASCII, two keys equal ignoring case, an attribute over 255 bytes, or a record over
    /// `maximumSize`.
    public init(_ attributes: [String: String]) throws(DNSError) {
        self.init()
        for key in attributes.keys.sorted() { try set(key, .bytes(Array(attributes[key]!.utf8))) }
    }

    /// Sets an attribute, replacing one with the same key (ASCII case ignored). Throws as `init(_:)`.
    public mutating func set(_ key: String, _ value: Value) throws(DNSError) {
        let keyBytes = Array(key.utf8)
        guard !keyBytes.isEmpty, keyBytes.allSatisfy(Self.isKeyByte) else {
            throw .invalidTXT("key \"\(key)\" must be 1 or more printable ASCII characters other than '='")
        }
        var candidate = entries.filter { $0.key.lowercased() != key.lowercased() }
        candidate.append((key, value))
        let size = Self.strings(of: candidate).reduce(0) { $0 + 1 + $1.count }
        // Each attribute is one length-prefixed string: a key alone counts too.
        guard Self.strings(of: [(key, value)])[0].count <= 255 else {
            throw .invalidTXT("attribute \"\(key)\" is longer than 255 bytes")
        }
        guard size <= Self.maximumSize else { throw .invalidTXT("record of \(size) bytes exceeds \(Self.maximumSize)") }
        entries = candidate
    }

    /// The value for `key`, ignoring ASCII case; nil when absent.
    public subscript(key: String) -> Value? {
        entries.first { $0.key.lowercased() == key.lowercased() }?.value
    }

    /// The attributes that have text values, keys lower-cased (for display and JSON).
    public var dictionary: [String: String] {
        var result = [String: String]()
        for entry in entries {
            switch entry.value {
            case .present: result[entry.key.lowercased()] = ""
            case .bytes(let bytes): result[entry.key.lowercased()] = String(decoding: bytes, as: UTF8.self)
            }
        }
        return result
    }

    /// The record's strings for the wire; one empty string when there are no attributes (§6.1).
    public var strings: [[UInt8]] {
        entries.isEmpty ? [[]] : Self.strings(of: entries)
    }

    private static func strings(of entries: [(key: String, value: Value)]) -> [[UInt8]] {
        entries.map { entry in
            switch entry.value {
            case .present: Array(entry.key.utf8)
            case .bytes(let bytes): Array(entry.key.utf8) + [UInt8(ascii: "=")] + bytes
            }
        }
    }

    static func isKeyByte(_ byte: UInt8) -> Bool { (0x20...0x7E).contains(byte) && byte != UInt8(ascii: "=") }

    /// Equal when both encode to the same strings (same attributes in the same order).
    public static func == (lhs: TXTRecord, rhs: TXTRecord) -> Bool { lhs.strings == rhs.strings }

    /// Hashes the encoded strings, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(strings) }
}
