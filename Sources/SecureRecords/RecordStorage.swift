import Foundation

/// How a stored record's sealed values are keyed.
public enum RecordKeying: String, Sendable, Hashable, Codable {
    /// Raw-key `SFE1` envelopes under store key `keyId` (unlock once, open everything).
    case storeKey
    /// scrypt `SFE1` envelopes under the record's own password (fresh salt per value).
    case password
}

/// A store key sealed by the application's key-encryption capability (an `ItemSealer` such as the vault).
public struct WrappedStoreKey: Sendable, Hashable {
    /// The key id (1, 2, ...; rotation adds one).
    public let id: UInt32
    /// What `ItemSealer.seal` returned for the 32 key bytes with the key-wrap context.
    public let wrapped: Data

    /// A wrapped key as stored.
    public init(id: UInt32, wrapped: Data) {
        self.id = id
        self.wrapped = wrapped
    }
}

extension WrappedStoreKey {
    /// A key id read back from a storage's integer column, or `malformedStorage` (naming `place`)
    /// when it is not one (a store writer who set it to `k + 2^32` would otherwise have it read as `k`).
    package static func id(stored value: Int64, in place: @autoclosure () -> String) throws(RecordsError) -> UInt32 {
        guard let id = UInt32(exactly: value) else {
            throw .storage(StorageFailure(.malformedStorage, "\(place()): key id \(value) is out of range"))
        }
        return id
    }
}

/// What identifies a store and its keys. Bound into every sealed value through `storeId`.
public struct StoreMetadata: Sendable, Hashable {
    /// The random 16-byte store id.
    public let storeId: Data
    /// The key id new store-keyed records use, nil before the first unlock.
    public var currentKeyId: UInt32?
    /// Every store key, wrapped.
    public var keys: [WrappedStoreKey]

    /// Metadata as stored.
    public init(storeId: Data, currentKeyId: UInt32?, keys: [WrappedStoreKey]) {
        self.storeId = storeId
        self.currentKeyId = currentKeyId
        self.keys = keys
    }
}

extension StoreMetadata {
    /// The store's latest key when it is later than the one the store names as current (its current
    /// key was moved back), else nil: rotation makes each new key current at once, and an import
    /// only moves the current key forward.
    var keyLaterThanCurrent: UInt32? {
        guard let current = currentKeyId, let latest = keys.map(\.id).max(), latest > current else { return nil }
        return latest
    }
}

/// One record as a backend stores it: clear values, sealed envelopes and blind-index tokens. The
/// backend never sees plaintext of sealed fields or any key.
public struct StoredRecord: Sendable, Hashable {
    /// The record id.
    public let id: UUID
    /// The collection name.
    public let collection: String
    /// How the sealed values are keyed.
    public var keying: RecordKeying
    /// The store key id used for sealed values (store-keyed records) and blind indexes; nil for a
    /// password record without blind indexes.
    public var keyId: UInt32?
    /// Clear fields.
    public var clear: [String: FieldValue]
    /// Sealed fields: `SFE1` envelopes.
    public var sealed: [String: Data]
    /// Blind-index tokens of sealed fields the schema indexes, under key `keyId`.
    public var blindIndexes: [String: Data]
    /// The record's authentication (docs/FORMATS.md, "Record authentication"): for a store-keyed
    /// record, its 32-byte MAC under store key `keyId`; for a password record, empty when its sealed
    /// values bind its clear fields. Nil for a record written before records were authenticated
    /// (or, store-keyed, while the store had no key).
    public var mac: Data?

    /// A stored record.
    public init(
        id: UUID, collection: String, keying: RecordKeying, keyId: UInt32?, clear: [String: FieldValue],
        sealed: [String: Data], blindIndexes: [String: Data], mac: Data? = nil
    ) {
        self.id = id
        self.collection = collection
        self.keying = keying
        self.keyId = keyId
        self.clear = clear
        self.sealed = sealed
        self.blindIndexes = blindIndexes
        self.mac = mac
    }

    /// Whether `other` holds exactly the same bytes. `==` compares text by canonical equivalence
    /// (an NFC and an NFD spelling of a value are equal to it); a conditional write must not take
    /// a record whose only change is such a respelling for unchanged.
    public func isIdentical(to other: StoredRecord) -> Bool {
        self == other && collection.utf8.elementsEqual(other.collection.utf8) && Self.identical(clear, other.clear)
            && Self.identical(sealed, other.sealed) && Self.identical(blindIndexes, other.blindIndexes)
    }

    /// Whether two clear field maps hold exactly the same bytes (names and values, not up to
    /// canonical equivalence as `==`).
    package static func identical(_ a: [String: FieldValue], _ b: [String: FieldValue]) -> Bool {
        identical(a.mapValues { Data([$0.kindByte]) + $0.payload }, b.mapValues { Data([$0.kindByte]) + $0.payload })
    }

    /// Whether two maps of sealed values or tokens hold exactly the same bytes, names included.
    package static func identical(_ a: [String: Data], _ b: [String: Data]) -> Bool {
        // The byte form of each name and value, in a canonical order.
        func bytes(_ fields: [String: Data]) -> [[UInt8]] {
            fields.map { Array($0.key.utf8) + [0xFF] + Array($0.value) }.sorted { $0.lexicographicallyPrecedes($1) }
        }
        return a.count == b.count && bytes(a) == bytes(b)
    }

    /// Whether this password record's sealed values bind its clear fields (`SFR2` and `SFR3`
    /// contexts: its `mac` is empty or a write id).
    var bindsClearFields: Bool { keying == .password && mac != nil }

    /// Whether this password record's sealed values bind its whole write (`SFR3` contexts: its
    /// `mac` is a write id).
    var bindsItsWrite: Bool { keying == .password && mac?.count == RecordAuthentication.writeIdByteCount }

    /// The text indexed for full-text search: the clear text values, one per line, in field-name order.
    public var fullText: String { Self.fullText(of: clear) }

    /// The text indexed for full-text search of a record with these clear values.
    public static func fullText(of clear: [String: FieldValue]) -> String {
        clear.sorted { $0.key < $1.key }.compactMap { $0.value.string }.joined(separator: "\n")
    }
}

/// A search a backend runs over one collection: every condition must hold.
public struct StorageQuery: Sendable, Hashable {
    /// One blind-index alternative: the token under one store key id.
    public struct Token: Sendable, Hashable {
        /// The key id the token was computed with.
        public let keyId: UInt32
        /// The truncated HMAC.
        public let token: Data
    }

    /// The collection searched.
    public var collection: String
    /// Clear field equal to the value.
    public var equals: [(field: String, value: FieldValue)] = []
    /// Clear text field starting with the prefix.
    public var prefixes: [(field: String, prefix: String)] = []
    /// Sealed field whose blind index matches one of the tokens.
    public var blindIndexes: [(field: String, tokens: [Token])] = []
    /// An FTS5 query over the clear text fields.
    public var fullText: String?

    /// An unconditional query over `collection`.
    public init(collection: String) { self.collection = collection }

    /// Equal when every condition is equal, in the same order.
    public static func == (a: StorageQuery, b: StorageQuery) -> Bool {
        a.collection == b.collection && a.fullText == b.fullText
            && a.equals.elementsEqual(b.equals) { $0.field == $1.field && $0.value == $1.value }
            && a.prefixes.elementsEqual(b.prefixes) { $0.field == $1.field && $0.prefix == $1.prefix }
            && a.blindIndexes.elementsEqual(b.blindIndexes) { $0.field == $1.field && $0.tokens == $1.tokens }
    }

    /// Hashes the conditions that `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(collection)
        hasher.combine(fullText)
    }
}

/// A storage backend for a record store. Each method is atomic (one transaction); concurrent
/// callers, in this process or others, lose no write. The SQLite implementation is
/// `SQLiteRecordStorage`. Errors are `RecordsError` (`storage` for backend failures).
public protocol RecordStorage: Sendable {
    /// The store's metadata, or nil when the storage holds no store yet.
    func loadMetadata() throws(RecordsError) -> StoreMetadata?
    /// Stores `metadata` when the storage holds no store; returns the metadata now stored (another
    /// process may have won the race).
    func initialize(_ metadata: StoreMetadata) throws(RecordsError) -> StoreMetadata
    /// Adds a wrapped key and, when `makeCurrent`, makes it the current key (one transaction).
    /// Returns false, changing nothing, when a key with that id exists (another process added it).
    func addKey(_ key: WrappedStoreKey, makeCurrent: Bool) throws(RecordsError) -> Bool
    /// Replaces the wrapped form of existing keys (same ids, same key bytes wrapped anew) in one
    /// transaction; `storeKeyUnavailable` naming an id the store does not hold (nothing changed).
    func rewrapKeys(_ keys: [WrappedStoreKey]) throws(RecordsError)
    /// Every collection and its schema.
    func collections() throws(RecordsError) -> [String: RecordSchema]
    /// Declares `collection` with `schema` unless it exists; returns the schema now stored.
    func createCollection(_ collection: String, schema: RecordSchema) throws(RecordsError) -> RecordSchema
    /// Inserts new records; `duplicateRecord` if an id exists (then nothing is inserted).
    func insert(_ records: [StoredRecord]) throws(RecordsError)
    /// Inserts new records as `insert(_:)` does, in one transaction that first reads the store's
    /// metadata and hands it to `accept`: when `accept` returns false or throws, nothing is inserted
    /// (false, or its error), whatever the insert itself would have met (an id that exists, say;
    /// an id given twice in `records` may be refused first). A write whose keys are checked against
    /// the store in its own transaction, and the store's current key cannot change between that
    /// read and the commit (SQLite serialises writers; PostgreSQL holds a shared advisory lock on
    /// the store, which `addKey(_:makeCurrent: true)` takes exclusively), so that a rotation that
    /// has made its key current finds every record written under an older key. `accept` only
    /// decides: it may run more than once (a transaction run again). The default reads the
    /// metadata, then inserts, in two transactions: a storage that wraps another should forward
    /// this call and its kin (`insertInOneTransaction(ifAccepted:_:)`,
    /// `replace(_:ifUnchangedFrom:ifAccepted:)`).
    func insert(_ records: [StoredRecord], ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool) throws(RecordsError) -> Bool
    /// Runs `body` with an `insert` function, and stores everything `insert` was given in one
    /// transaction: all or none (an error from `body` or from `insert` inserts nothing;
    /// `duplicateRecord` if an id exists). The transaction reads the store's metadata and hands it
    /// to `accept`, as `insert(_:ifAccepted:)` does: before `body` runs (when `accept` returns false
    /// or throws, `body` does not run) and, on a backend that does not hold the keys for the whole
    /// load, again after it; when `accept` refuses, nothing is inserted (false, or its error). The
    /// current key the last check saw holds until the commit. `insert` may be called from another
    /// thread than the caller's while the caller is blocked in `body` (a fork-join), never from two
    /// at once. A backend that can write a batch while the caller prepares the next one should; the
    /// default reads the metadata, collects every batch and calls `insert(_:)` when `body` returns.
    /// (Replaces `insertInOneTransaction(_:)`, now a convenience that accepts any metadata: a
    /// storage that implemented that one should implement this one.)
    func insertInOneTransaction(
        ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool,
        _ body: (_ insert: ([StoredRecord]) throws(RecordsError) -> Void) throws(RecordsError) -> Void
    ) throws(RecordsError) -> Bool
    /// Replaces existing records (all or none); `recordNotFound` if one is missing.
    func replace(_ records: [StoredRecord]) throws(RecordsError)
    /// Replaces each of `records` whose stored row is still exactly its namesake in `expected` (as
    /// `record(_:)` returns it), in one transaction that holds those rows against other writers
    /// from the comparison to the write; returns the ids it left alone, because their row changed
    /// or was deleted since `expected` was read. A read-modify-write through it (an update, a key
    /// rotation) never overwrites another client's write.
    func replace(_ records: [StoredRecord], ifUnchangedFrom expected: [StoredRecord]) throws(RecordsError) -> Set<UUID>
    /// `replace(_:ifUnchangedFrom:)` in a transaction that first reads the store's metadata and
    /// hands it to `accept`, as `insert(_:ifAccepted:)` does (for a write under the store's current
    /// key: an update): when `accept` returns false (then nil is returned) or throws, nothing is
    /// replaced. The default reads the metadata, then replaces, in two transactions.
    func replace(
        _ records: [StoredRecord], ifUnchangedFrom expected: [StoredRecord], ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool
    ) throws(RecordsError) -> Set<UUID>?
    /// Deletes a record; false when it did not exist.
    func delete(_ id: UUID) throws(RecordsError) -> Bool
    /// The record with `id`.
    func record(_ id: UUID) throws(RecordsError) -> StoredRecord?
    /// Records matching `query`, in insertion order.
    func search(_ query: StorageQuery) throws(RecordsError) -> [StoredRecord]
    /// Up to `limit` records, in insertion order after the insertion position `position` (0: from
    /// the first), that key rotation must rewrite to put the store under key `keyId`: those whose
    /// `keyId` is set and differs, and store-keyed records with no `keyId` (clear-only records
    /// written while the store had no key, which rotation authenticates); and the position of the
    /// last one returned (`position` when none is). Rotation pages through a store of any size in
    /// linear time (`replace` keeps a record's position).
    func records(withKeyIdOtherThan keyId: UInt32, after position: Int64, limit: Int) throws(RecordsError)
        -> (records: [StoredRecord], last: Int64)
    /// Runs `body` in one transaction with a writer of what an export holds (an import streams its
    /// records through it in batches); an error from `body` rolls everything back. A backend may
    /// run `body` again from the start (PostgreSQL after a lost connection).
    func importAll(_ body: (any RecordImportWriter) throws(RecordsError) -> Void) throws(RecordsError)
    /// Up to `limit` records in insertion order after the insertion position `position` (0: from the
    /// first), and the position of the last one returned (`position` when none is): export pages
    /// through a store of any size in linear time, and a record added or deleted meanwhile never
    /// shifts the pages.
    func allRecords(after position: Int64, limit: Int) throws(RecordsError) -> (records: [StoredRecord], last: Int64)
    /// How many calls the storage serves at once (PostgreSQL: its connections; SQLite: its one
    /// connection serves one transaction at a time, the cryptography around it runs beside). A
    /// store's async calls (`RecordStore.async`) run on at most this many threads; more calls wait
    /// in a queue without holding a thread.
    var concurrentCalls: Int { get }
}

extension RecordStorage {
    /// One per core: the sealing and opening around each storage call keep a core busy.
    public var concurrentCalls: Int { ProcessInfo.processInfo.activeProcessorCount }

    /// Reads the metadata, then inserts: two transactions.
    public func insert(
        _ records: [StoredRecord], ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool
    ) throws(RecordsError) -> Bool {
        guard try accept(try loadMetadata()) else { return false }
        try insert(records)
        return true
    }

    /// Reads the metadata, then collects every batch `body` inserts and inserts them with
    /// `insert(_:)`: two transactions.
    public func insertInOneTransaction(
        ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool,
        _ body: (_ insert: ([StoredRecord]) throws(RecordsError) -> Void) throws(RecordsError) -> Void
    ) throws(RecordsError) -> Bool {
        guard try accept(try loadMetadata()) else { return false }
        var all: [StoredRecord] = []
        try body { (batch) throws(RecordsError) in all += batch }
        try insert(all)
        return true
    }

    /// `insertInOneTransaction(ifAccepted:_:)` whatever the store's metadata.
    public func insertInOneTransaction(
        _ body: (_ insert: ([StoredRecord]) throws(RecordsError) -> Void) throws(RecordsError) -> Void
    ) throws(RecordsError) {
        _ = try insertInOneTransaction(ifAccepted: { _ in true }, body)
    }

    /// Reads the metadata, then replaces with `replace(_:ifUnchangedFrom:)`: two transactions.
    public func replace(
        _ records: [StoredRecord], ifUnchangedFrom expected: [StoredRecord], ifAccepted accept: (StoreMetadata?) throws(RecordsError) -> Bool
    ) throws(RecordsError) -> Set<UUID>? {
        guard try accept(try loadMetadata()) else { return nil }
        return try replace(records, ifUnchangedFrom: expected)
    }
}

/// The writes of an import, inside the one transaction of `RecordStorage.importAll`.
public protocol RecordImportWriter {
    /// The export's store line: creates the store with id `storeId` when the storage has none (in
    /// the import's transaction), or checks that the store's id is `storeId` (`storeMismatch`);
    /// then adds the export's wrapped keys: a key id the store holds must hold the same wrapped key
    /// (`storeMismatch`); `currentKeyId` becomes current when the store has no current key, unless
    /// the store holds store-keyed records without a key, then or by the import's commit
    /// (`importBlockedByRecordsWithoutKey`).
    func addStore(_ storeId: Data, keys: [WrappedStoreKey], currentKeyId: UInt32?) throws(RecordsError)
    /// Adds a collection, or checks that the store's has this schema (`schemaMismatch`).
    func addCollection(_ name: String, schema: RecordSchema) throws(RecordsError)
    /// Inserts records (`duplicateRecord` when an id exists).
    func insert(_ records: [StoredRecord]) throws(RecordsError)
}
