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

    /// Field names are 1...255 bytes of UTF-8 without control characters.
    public init(_ fields: [String: FieldProtection]) throws(RecordsError) {
        guard !fields.isEmpty else { throw .invalidSchema("a schema declares at least one field") }
        for name in fields.keys { try Self.validateName(name, what: "field") }
        self.fields = fields
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
        try self.init(decoded.fields)
    }

    /// The protection of `field`, or `unknownField`.
    func protection(of field: String, collection: String) throws(RecordsError) -> FieldProtection {
        guard let protection = fields[field] else { throw .unknownField(collection: collection, field: field) }
        return protection
    }
}
