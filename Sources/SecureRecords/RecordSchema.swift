import Foundation

/// How one field of a collection is stored.
public enum FieldProtection: String, Sendable, Hashable, Codable, CaseIterable {
    /// Stored in clear: searchable by equality, prefix and full text (text values).
    case clear
    /// Sealed (AEAD with a fresh nonce); not searchable.
    case sealed
    /// Sealed, plus a blind index (truncated keyed hash) allowing equality search without decrypting.
    /// The index reveals which records share a value (see docs/SECURITY.md).
    case sealedIndexed = "sealed+blindIndex"

    /// Whether values are sealed.
    public var isSealed: Bool { self != .clear }
}

/// The fields of a collection and their protection, declared once by the application and stored
/// with the collection. Records may omit fields; a field not declared is rejected.
public struct RecordSchema: Sendable, Hashable, Codable {
    /// Field name → protection.
    public let fields: [String: FieldProtection]

    /// Field names are 1...255 bytes of UTF-8 without control characters, kept in Unicode NFC
    /// (names that differ only in normalization, such as `naïve` precomposed or with a combining
    /// diaeresis, are one name: docs/FORMATS.md).
    public init(_ fields: [String: FieldProtection]) throws(RecordsError) {
        guard !fields.isEmpty else { throw .invalidSchema("a schema declares at least one field") }
        for name in fields.keys { try Self.validateName(name, what: "field") }
        self.fields = Dictionary(fields.map { (RecordNames.nfc($0.key), $0.value) }) { first, _ in first }
    }

    /// A schema as stored, its names in the spelling they were stored with (an earlier version
    /// kept names as given, so a stored name may not be NFC).
    init(stored fields: [String: FieldProtection]) throws(RecordsError) {
        guard !fields.isEmpty else { throw .invalidSchema("a schema declares at least one field") }
        for name in fields.keys { try Self.validateName(name, what: "field") }
        self.fields = fields
    }

    /// The spelling `field` has in this schema (names compare by canonical equivalence), or nil.
    func storedName(of field: String) -> String? {
        fields.index(forKey: field).map { fields[$0].key }
    }

    /// `values` with every field name in this schema's spelling (unknown names are kept, for the
    /// caller to refuse).
    func respelled<Value>(_ values: [String: Value]) -> [String: Value] {
        let differs = values.keys.contains { name in storedName(of: name).map { !$0.utf8.elementsEqual(name.utf8) } ?? false }
        guard differs else { return values }
        return Dictionary(values.map { (storedName(of: $0.key) ?? $0.key, $0.value) }) { first, _ in first }
    }

    /// Checks a collection or field name: 1...255 UTF-8 bytes, no control characters.
    static func validateName(_ name: String, what: String) throws(RecordsError) {
        guard !name.isEmpty, name.utf8.count <= 255, !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw .invalidSchema("\(what) name '\(name)' must be 1...255 bytes without control characters") }
    }

    /// The canonical JSON stored with the collection: `{"fields":{name: protection}}`, sorted keys.
    var canonicalJSON: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    /// Parses the stored JSON.
    init(json: String) throws(RecordsError) {
        let decoded: RecordSchema
        do {
            decoded = try JSONDecoder().decode(RecordSchema.self, from: Data(json.utf8))
        } catch {
            throw .invalidSchema("stored schema is not valid JSON of the expected shape")
        }
        try self.init(stored: decoded.fields)
    }

    /// The protection of `field`, or `unknownField`.
    func protection(of field: String, collection: String) throws(RecordsError) -> FieldProtection {
        guard let protection = fields[field] else { throw .unknownField(collection: collection, field: field) }
        return protection
    }
}

/// Collection and field names in one byte form. Swift compares strings by canonical equivalence,
/// while the stores compare bytes: a name is written in NFC and looked up in the spelling its
/// collection or schema already has (docs/FORMATS.md, "Names").
public enum RecordNames {
    /// `name` in Unicode Normalization Form C.
    public static func nfc(_ name: String) -> String { name.precomposedStringWithCanonicalMapping }

    /// The byte-distinct spellings of `name` a store may hold: as given, NFC and NFD (rows that an
    /// earlier version wrote under a second spelling of one name).
    public static func spellings(of name: String) -> [String] {
        var result: [String] = []
        for spelling in [name, name.precomposedStringWithCanonicalMapping, name.decomposedStringWithCanonicalMapping]
        where !result.contains(where: { $0.utf8.elementsEqual(spelling.utf8) }) {
            result.append(spelling)
        }
        return result
    }
}
