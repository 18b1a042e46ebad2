import Foundation
import SecureCore

/// Every failure SecureRecords reports. Each case names one cause; `description` is a sentence a
/// person can act on and never contains field values, keys or passwords.
public enum RecordsError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No record has this id.
    case recordNotFound(UUID)
    /// A record with this id already exists.
    case duplicateRecord(UUID)
    /// The collection has not been created (no schema declared).
    case collectionNotFound(String)
    /// The collection exists with a different schema; a schema is declared once.
    case schemaMismatch(collection: String)
    /// A schema, collection name or field name is not acceptable (empty, too long, unknown kind).
    case invalidSchema(String)
    /// The field is not declared in the collection's schema.
    case unknownField(collection: String, field: String)
    /// The field's declared protection does not allow this use (a sealed field given as clear, a
    /// search on a sealed field without a blind index, ...).
    case fieldProtectionMismatch(collection: String, field: String, reason: String)
    /// A sealed value failed to open: wrong password or store key, the value was modified, or it was
    /// moved from another record, field, collection or store. No plaintext is returned.
    case authenticationFailed(record: UUID, field: String)
    /// The record was changed outside SecureRecords: a clear field, blind-index token, sealed value
    /// or key id rewritten, added or removed, its MAC removed, or a search index that disagrees
    /// with it (docs/SECURITY.md says what is checked, and when). Nothing of it is returned.
    case recordModified(UUID, reason: String)
    /// The record is sealed with a per-record password and none (or none usable) was given.
    case passwordRequired(UUID)
    /// The operation needs the store key: unlock the store (with the vault or the application's key) first.
    case storeKeyRequired
    /// The store key could not be unwrapped: wrong key or sealer, locked vault, or a modified key entry.
    case storeKeyUnavailable(String)
    /// A sealed value or wrapped key is malformed (not an `SFE1` envelope, truncated, unknown algorithm).
    case malformedSealedValue(record: UUID, field: String, reason: String)
    /// The KDF cost stored with a sealed value exceeds the configured ceiling; nothing was derived.
    case costAboveCeiling(String)
    /// The record would take more than the `limit` bytes a record may hold
    /// (`RecordStore.Configuration.maximumRecordBytes`); nothing was written.
    case recordTooLarge(limit: Int)
    /// A full-text or prefix query is not well formed.
    case invalidQuery(String)
    /// An export line could not be imported; nothing was imported.
    case invalidImport(line: Int, reason: String)
    /// The import's input could not be opened or read (nothing was imported).
    case unreadableImport(SecureCoreError)
    /// The export belongs to another store (sealed values are bound to their store id).
    case storeMismatch
    /// The import would give the store its first key while the store holds records added without
    /// one (by a client without the key, while the store had none; not those the export holds),
    /// which would then fail as modified: nothing was imported. Import into a new, empty store.
    case importBlockedByRecordsWithoutKey
    /// The storage holds something that is not a SecureRecords store, or a newer format version.
    case notARecordStore(String)
    /// The SQLite store file has a schema version newer than this library reads (`found`; this
    /// library writes `supported`). The file is left unchanged: open it with a newer library.
    case unsupportedSchemaVersion(found: Int64, supported: Int64)
    /// The storage backend failed (file unreadable, disk full, lock held too long, connection lost,
    /// a server error): `StorageFailure.cause` says which, with the SQLSTATE or SQLite code.
    case storage(StorageFailure)
    /// A cryptographic operation failed for a reason other than authentication.
    case crypto(SecureCoreError)

    /// What went wrong, in words for a user; never a secret or a sealed value. Names and reasons
    /// come from a store, an import or a server that anyone may have written: their control
    /// characters are escaped (`PrintableText`), so that none reaches a terminal.
    public var description: String { PrintableText.escaped(sentence) }

    private var sentence: String {
        switch self {
        case .recordNotFound(let id): "no record with id \(id.uuidString.lowercased())"
        case .duplicateRecord(let id): "a record with id \(id.uuidString.lowercased()) already exists"
        case .collectionNotFound(let name): "no collection named '\(name)'"
        case .schemaMismatch(let name): "collection '\(name)' exists with a different schema"
        case .invalidSchema(let reason): "invalid schema: \(reason)"
        case .unknownField(let collection, let field): "collection '\(collection)' has no field '\(field)'"
        case .fieldProtectionMismatch(let collection, let field, let reason):
            "field '\(field)' of collection '\(collection)': \(reason)"
        case .authenticationFailed(let record, let field):
            "sealed field '\(field)' of record \(record.uuidString.lowercased()) failed to open: wrong password or key, "
                + "or the value was modified or moved from another record"
        case .recordModified(let id, let reason):
            "record \(id.uuidString.lowercased()) was changed outside SecureRecords (\(reason)); it is not returned"
        case .passwordRequired(let id): "record \(id.uuidString.lowercased()) is sealed with its own password; give it"
        case .storeKeyRequired: "the store key is needed: unlock the store with the vault or the application key"
        case .storeKeyUnavailable(let reason): "the store key could not be unwrapped: \(reason)"
        case .malformedSealedValue(let record, let field, let reason):
            "sealed field '\(field)' of record \(record.uuidString.lowercased()) is malformed: \(reason)"
        case .costAboveCeiling(let detail): "key derivation cost above ceiling: \(detail)"
        case .recordTooLarge(let limit): "the record would take more than the \(limit) bytes a record may hold; nothing was written"
        case .invalidQuery(let reason): "invalid query: \(reason)"
        case .invalidImport(let line, let reason): "import line \(line): \(reason); nothing was imported"
        case .unreadableImport(let error): "cannot read the import: \(error); nothing was imported"
        case .storeMismatch: "the export belongs to another store; sealed values only open in their own store"
        case .importBlockedByRecordsWithoutKey:
            "the store holds records added without a store key, which the export's key would leave failing as modified; "
                + "nothing was imported (import into a new, empty store)"
        case .notARecordStore(let reason): "not a SecureRecords store: \(reason)"
        case .unsupportedSchemaVersion(let found, let supported):
            "record store schema version \(found) is newer than this library supports (\(supported)); upgrade"
        case .storage(let failure): "record storage: \(failure.message)"
        case .crypto(let error): "\(error)"
        }
    }
}
