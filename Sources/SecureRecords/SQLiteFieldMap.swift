import Foundation

/// The field-map encoding of the SQLite schema v2 (docs/FORMATS.md, "SecureRecords", "SQLite
/// file"): a record's clear values, sealed values or blind-index tokens in one column, as
/// `lp(name) || lp(value)` entries (`lp(x)` = `u32be(len(x)) || x`) in strictly ascending bytewise
/// order of the names' UTF-8; no entry is the empty blob. One map has exactly one encoding, and a
/// decoder rejects anything else (truncation, trailing bytes, unsorted or repeated names, names that
/// are empty or not UTF-8).
enum SQLiteFieldMap {
    /// Encodes `entries` (names in any order).
    static func encode(_ entries: [String: Data]) -> Data {
        let sorted = entries.map { (name: Array($0.key.utf8), value: $0.value) }
            .sorted { $0.name.lexicographicallyPrecedes($1.name) }
        var out = Data(capacity: sorted.reduce(0) { $0 + 8 + $1.name.count + $1.value.count })
        for entry in sorted {
            appendLengthPrefixed(entry.name, to: &out)
            appendLengthPrefixed(entry.value, to: &out)
        }
        return out
    }

    private static func appendLengthPrefixed<C: Collection<UInt8>>(_ bytes: C, to out: inout Data) {
        let count = UInt32(bytes.count)
        out.append(contentsOf: [UInt8(count >> 24), UInt8(truncatingIfNeeded: count >> 16), UInt8(truncatingIfNeeded: count >> 8),
            UInt8(truncatingIfNeeded: count)])
        out.append(contentsOf: bytes)
    }

    /// Why a stored map was refused.
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    /// Decodes a map, refusing any other encoding than `encode`'s.
    static func decode(_ data: Data) throws(Malformed) -> [String: Data] {
        let bytes = [UInt8](data)
        var result: [String: Data] = [:]
        var offset = 0
        var previous: ArraySlice<UInt8>?
        func take() throws(Malformed) -> ArraySlice<UInt8> {
            guard bytes.count - offset >= 4 else { throw Malformed(description: "truncated length") }
            let count = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            offset += 4
            guard bytes.count - offset >= count else { throw Malformed(description: "truncated entry") }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }
        while offset < bytes.count {
            let name = try take()
            let value = try take()
            guard !name.isEmpty, let text = String(validating: name, as: UTF8.self) else {
                throw Malformed(description: "field name empty or not UTF-8")
            }
            if let previous, !previous.lexicographicallyPrecedes(name) { throw Malformed(description: "field names not in ascending order") }
            guard result.updateValue(Data(value), forKey: text) == nil else { throw Malformed(description: "repeated field name") }
            previous = name
        }
        return result
    }
}
