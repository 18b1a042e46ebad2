import Foundation

/// The field-map encoding (docs/FORMATS.md, "SecureRecords", "Field map"): a record's clear values,
/// sealed values or blind-index tokens as one byte string (a column of the SQLite file, and what a
/// record MAC and a password record's sealed-value context cover), as
/// `lp(name) || lp(value)` entries (`lp(x)` = `u32be(len(x)) || x`) in strictly ascending bytewise
/// order of the names' UTF-8; no entry is the empty blob. One map has exactly one encoding, and a
/// decoder rejects anything else (truncation, trailing bytes, unsorted or repeated names, names that
/// are empty or not UTF-8).
enum FieldMap {
    /// Encodes `entries` (names in any order).
    static func encode(_ entries: [String: Data]) -> [UInt8] {
        var out: [UInt8] = []
        append(entries, to: &out, lengthPrefixed: false)
        return out
    }

    /// Encodes clear values, each as `kind || payload` (`FieldValue.withEncoded`).
    static func encode(clear entries: [String: FieldValue]) -> [UInt8] {
        var out: [UInt8] = []
        append(clear: entries, to: &out, lengthPrefixed: false)
        return out
    }

    /// Appends the encoding of `entries` to `out`, preceded by its length (`lp`) when
    /// `lengthPrefixed`: for a MAC input, without building the encoding apart.
    static func append(_ entries: [String: Data], to out: inout [UInt8], lengthPrefixed: Bool) {
        append(entries, size: \.count, to: &out, lengthPrefixed: lengthPrefixed) { value, out in out.append(contentsOf: value) }
    }

    /// `append(_:to:lengthPrefixed:)` for clear values (`encode(clear:)`).
    static func append(clear entries: [String: FieldValue], to out: inout [UInt8], lengthPrefixed: Bool) {
        append(entries, size: { 1 + $0.payloadCount }, to: &out, lengthPrefixed: lengthPrefixed) { value, out in
            out.append(value.kindByte)
            switch value {
            case .string(let s): out.append(contentsOf: s.utf8)
            case .bytes(let b): out.append(contentsOf: b)
            }
        }
    }

    /// The order of field names in every encoding: by their UTF-8 bytes (not Swift's string order).
    static func precedes(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    private static func append<Value>(
        _ entries: [String: Value], size: (Value) -> Int, to out: inout [UInt8], lengthPrefixed: Bool,
        append: (Value, inout [UInt8]) -> Void
    ) {
        let sorted = entries.sorted { precedes($0.key, $1.key) }
        let total = sorted.reduce(0) { $0 + 8 + $1.key.utf8.count + size($1.value) }
        // Reserved only in an empty buffer: exact reservations in a growing one would each copy it.
        if out.isEmpty { out.reserveCapacity(total + 4) }
        if lengthPrefixed { appendLength(total, to: &out) }
        for (name, value) in sorted {
            appendLength(name.utf8.count, to: &out)
            out.append(contentsOf: name.utf8)
            appendLength(size(value), to: &out)
            append(value, &out)
        }
    }

    private static func appendLength(_ count: Int, to out: inout [UInt8]) {
        let count = UInt32(count)
        out.append(UInt8(count >> 24))
        out.append(UInt8(truncatingIfNeeded: count >> 16))
        out.append(UInt8(truncatingIfNeeded: count >> 8))
        out.append(UInt8(truncatingIfNeeded: count))
    }

    /// Why a stored map was refused.
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    /// Decodes a map, refusing any other encoding than `encode`'s.
    static func decode(_ bytes: [UInt8]) throws(Malformed) -> [String: Data] {
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

    /// A record row's three maps decoded: its clear values (`kind || payload` each), its sealed
    /// values and its blind-index tokens; `Malformed` for any map `decode` refuses or a clear
    /// value of an unknown kind or text that is not UTF-8.
    static func decodeRow(clear: [UInt8], sealed: [UInt8], tokens: [UInt8]) throws(Malformed)
        -> (clear: [String: FieldValue], sealed: [String: Data], tokens: [String: Data])
    {
        var values: [String: FieldValue] = [:]
        for (name, encoded) in try decode(clear) {
            guard let value = FieldValue(encoded: encoded) else {
                throw Malformed(description: "clear value '\(name)' has an unknown kind or is not UTF-8")
            }
            values[name] = value
        }
        return (values, try decode(sealed), try decode(tokens))
    }
}

/// The field maps for the fuzz target FuzzRecords, which checks that every map a record row can
/// hold is refused or decodes to values whose encoding is the same bytes (one encoding per map).
@_spi(Fuzzing) public enum FieldMapFuzzing {
    /// `SQLiteRecordStorage`'s decoding of a row's maps; nil where it refuses them.
    public static func decodeRow(clear: [UInt8], sealed: [UInt8], tokens: [UInt8])
        -> (clear: [String: FieldValue], sealed: [String: Data], tokens: [String: Data])?
    {
        try? FieldMap.decodeRow(clear: clear, sealed: sealed, tokens: tokens)
    }

    /// The encodings `SQLiteRecordStorage` writes for a row's maps.
    public static func encodeRow(clear: [String: FieldValue], sealed: [String: Data], tokens: [String: Data])
        -> (clear: [UInt8], sealed: [UInt8], tokens: [UInt8])
    {
        (FieldMap.encode(clear: clear), FieldMap.encode(sealed), FieldMap.encode(tokens))
    }
}
