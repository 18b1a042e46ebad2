import Foundation
import SecureCore

/// A `Codable` type stored as a record: every coding key is a field, `sealedFields` are sealed and
/// `blindIndexedFields` are sealed with a blind index; the others are clear. Declare the coding keys
/// `CaseIterable` so the schema lists every field, including optional ones:
///
/// ```swift
/// struct Gift: RecordCodable {
///     var toWhom: String
///     var description: String
///     enum CodingKeys: String, CodingKey, CaseIterable { case toWhom, description }
///     typealias Field = CodingKeys
///     static let sealedFields: Set<String> = ["description"]
/// }
/// ```
///
/// Each top-level property is one field: a `String` is stored as text (searchable as such when
/// clear); any other value as the bytes of its JSON encoding.
public protocol RecordCodable: Codable {
    /// The coding keys, listing every field.
    associatedtype Field: CodingKey & CaseIterable
    /// Fields sealed without an index.
    static var sealedFields: Set<String> { get }
    /// Fields sealed with a blind index (equality search with the store key; see docs/SECURITY.md).
    static var blindIndexedFields: Set<String> { get }
}

extension RecordCodable {
    /// No blind-indexed fields unless the type says so.
    public static var blindIndexedFields: Set<String> { [] }

    /// The schema the type declares.
    public static func recordSchema() throws(RecordsError) -> RecordSchema {
        var fields: [String: FieldProtection] = [:]
        for key in Field.allCases {
            let name = key.stringValue
            fields[name] = blindIndexedFields.contains(name) ? .sealedIndexed : sealedFields.contains(name) ? .sealed : .clear
        }
        for name in sealedFields.union(blindIndexedFields) where fields[name] == nil {
            throw .invalidSchema("'\(name)' is declared sealed but is not a coding key of \(Self.self)")
        }
        return try RecordSchema(fields)
    }

    /// The value's fields.
    func recordFields() throws(RecordsError) -> [String: FieldValue] {
        let object: [String: Any]
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            guard let decoded = try JSONSerialization.jsonObject(with: try encoder.encode(self), options: [.fragmentsAllowed]) as? [String: Any]
            else { throw RecordsError.invalidSchema("\(Self.self) does not encode as a keyed container") }
            object = decoded
        } catch let error as RecordsError {
            throw error
        } catch {
            throw .invalidSchema("\(Self.self) cannot be encoded: \(error)")
        }
        var fields: [String: FieldValue] = [:]
        for (name, value) in object {
            if let text = value as? String {
                fields[name] = .string(text)
            } else if value is NSNull {
                continue
            } else {
                guard let json = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys]) else {
                    throw .invalidSchema("field '\(name)' of \(Self.self) cannot be encoded")
                }
                fields[name] = .bytes(json)
            }
        }
        return fields
    }

    /// Rebuilds a value from a record's (opened) fields.
    init(recordFields fields: [String: FieldValue]) throws(RecordsError) {
        var object: [String: Any] = [:]
        for (name, value) in fields {
            switch value {
            case .string(let text): object[name] = text
            case .bytes(let json):
                guard let parsed = try? JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed]) else {
                    throw .invalidSchema("field '\(name)' is not the JSON of a \(Self.self) property")
                }
                object[name] = parsed
            }
        }
        do {
            self = try JSONDecoder().decode(Self.self, from: try JSONSerialization.data(withJSONObject: object))
        } catch {
            throw .invalidSchema("the record does not decode as \(Self.self): \(error)")
        }
    }
}

extension RecordStore {
    /// Declares `collection` with the schema `type` declares (see `createCollection(_:schema:)`).
    public func createCollection<T: RecordCodable>(_ collection: String, for type: T.Type) throws(RecordsError) {
        try createCollection(collection, schema: try T.recordSchema())
    }

    /// Adds `value` as a record of `collection`; returns its id.
    @discardableResult
    public func add<T: RecordCodable>(_ value: T, to collection: String, sealing: RecordSealing = .storeKey) throws(RecordsError) -> UUID {
        try add(try value.recordFields(), to: collection, sealing: sealing)
    }

    /// Opens the record `id` and decodes it as `type`.
    public func open<T: RecordCodable>(_ type: T.Type, _ id: UUID, password: SecretBytes? = nil) throws(RecordsError) -> T {
        try T(recordFields: try open(id, password: password).fields)
    }
}
