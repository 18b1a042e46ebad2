import Foundation
import SecureCore

/// A record as the application sees it: its clear fields always, its sealed fields only once opened.
public struct Record: Sendable, Hashable {
    /// The record id.
    public let id: UUID
    /// The collection the record belongs to.
    public let collection: String
    /// How its sealed fields are keyed.
    public let keying: RecordKeying
    /// The clear fields.
    public let clearFields: [String: FieldValue]
    /// The names of the record's sealed fields, sorted.
    public let sealedFieldNames: [String]
    /// The opened sealed fields (empty unless the record was opened with `RecordStore.open`).
    public let openedFields: [String: FieldValue]

    /// Clear fields merged with opened sealed fields.
    public var fields: [String: FieldValue] { clearFields.merging(openedFields) { clear, _ in clear } }

    init(_ stored: StoredRecord, opened: [String: FieldValue] = [:]) {
        id = stored.id
        collection = stored.collection
        keying = stored.keying
        clearFields = stored.clear
        sealedFieldNames = stored.sealed.keys.sorted()
        openedFields = opened
    }
}

/// What seals a record's sealed fields.
public enum RecordSealing: Sendable {
    /// The store key (the store must be unlocked).
    case storeKey
    /// The record's own password: scrypt with a fresh salt per value (one KDF per sealed value by design).
    case password(SecretBytes)
}

/// One search condition. Several conditions must all hold.
public enum RecordCondition: Sendable, Hashable {
    /// A clear field equals the value, or a sealed field with a blind index has this value (the
    /// store key is needed to compute the index token; nothing is decrypted).
    case equals(field: String, value: FieldValue)
    /// A clear text field starts with the prefix (byte-wise on UTF-8, case sensitive).
    case prefix(field: String, prefix: String)
    /// An SQLite FTS5 query over the record's clear text fields (`bicycle`, `"red bike"`, `bi*`, `a AND b`).
    case fullText(String)
}

/// What `RecordStore.rotateStoreKey` did.
public struct KeyRotation: Sendable, Equatable {
    /// The store key id every store-keyed record now uses.
    public let keyId: UInt32
    /// Records re-sealed (and re-indexed) by this call.
    public let resealed: Int
    /// True when this call finished a rotation an earlier, interrupted call had started (no new key).
    public let resumed: Bool
}
