import Crypto
import Foundation
import SecureCore

/// A store of records whose fields are clear (searchable) or sealed (AEAD, fresh nonce per value,
/// bound to store, collection, record and field), in collections with a declared schema, over any
/// `RecordStorage` (SQLite by default).
///
/// Keys: store-keyed records use a random 32-byte *store key* that the store keeps only wrapped by
/// the application's `ItemSealer` (the unlocked `Vault`, a `KeyItemSealer` over the application's
/// own key, or a `PassphraseItemSealer`): unlock once, open everything. Password records use the
/// record's own password (scrypt, fresh salt per value). Formats: docs/FORMATS.md ("SecureRecords").
public final class RecordStore: Sendable {
    /// Tunables.
    public struct Configuration: Sendable {
        /// The KDF for new password-sealed values (default scrypt logN 17, r 8, p 1).
        public var passwordKDF: PasswordKDF
        /// Ceilings on KDF costs read from stored values.
        public var kdfLimits: KDFLimits
        /// Records re-sealed per transaction during key rotation.
        public var rotationBatchSize: Int
        /// The ids given to new records (when the caller gives none).
        public var recordIds: RecordIdKind
        /// The most bytes a record may hold, as it is stored: its clear values (a string's UTF-8,
        /// or the bytes), its sealed values (their envelopes: the content and a few dozen bytes),
        /// its field names, blind-index tokens and MAC. `add`, `add(contentsOf:)` and `update`
        /// refuse a record above it with `recordTooLarge` and write nothing, on every backend
        /// alike. Default and most: `maximumRecordBytesCeiling` (a larger setting counts as it).
        public var maximumRecordBytes: Int

        /// 128 MiB (records are for small data; files belong in age files): a record's export
        /// line then stays below the 1 GiB an import reads even when every byte is escaped
        /// (JSON's `\u00XX`, 6 bytes for 1), and each value far below what either backend takes
        /// in one value (SQLite's 1,000,000,000 bytes, PostgreSQL's 1 GiB).
        public static let maximumRecordBytesCeiling = 128 << 20

        /// The defaults, or the given values.
        public init(
            passwordKDF: PasswordKDF = .default, kdfLimits: KDFLimits = .default, rotationBatchSize: Int = 256,
            recordIds: RecordIdKind = .timeOrdered, maximumRecordBytes: Int = maximumRecordBytesCeiling
        ) {
            self.passwordKDF = passwordKDF
            self.kdfLimits = kdfLimits
            self.rotationBatchSize = max(1, rotationBatchSize)
            self.recordIds = recordIds
            self.maximumRecordBytes = maximumRecordBytes
        }
    }

    /// The kind of id a store gives new records (docs/FORMATS.md, "Record ids"; SECURITY.md, "What
    /// a record's id tells").
    public enum RecordIdKind: Sendable, Equatable {
        /// UUID version 7 (RFC 9562): the creation time in milliseconds, then a counter and random
        /// bits. Increasing, so the indexes on the id grow at one end (bulk loads about a fifth
        /// faster on PostgreSQL); an id tells when its record was made.
        case timeOrdered
        /// UUID version 4: 122 random bits. An id tells nothing, and no id can be guessed from
        /// another; each insert lands at a random place in the indexes on the id.
        case random
    }

    struct Keyring: Sendable {
        var keys: [UInt32: SecretBytes]
        var current: UInt32
        /// The ids of keys whose records must carry a MAC (the flag inside their wrap).
        var authenticating: Set<UInt32>
        /// The record-MAC key of each store key.
        var macKeys: [UInt32: SymmetricKey]
        var fieldKeys: [FieldKeyID: SymmetricKey] = [:]
        /// What unwrapped the keys: kept while unlocked, so that a key another client adds (a
        /// rotation) is unwrapped when this one meets it, instead of failing.
        let sealer: any ItemSealer
        /// Which `unlock` made this keyring (a refresh keeps it): a refresh installs its keyring
        /// only over one of the same unlock, never over a `lock()` or a later unlock.
        let generation: UInt64

        /// Whether the store authenticates its records: any of its keys is flagged (so that pointing
        /// the store back at an older, unflagged key does not switch authentication off).
        var authenticatesRecords: Bool { !authenticating.isEmpty }
        /// Whether the current key is flagged (new records and rotations go under a flagged key).
        var currentKeyAuthenticates: Bool { authenticating.contains(current) }
    }

    struct FieldKeyID: Hashable {
        let keyId: UInt32
        let collection: String
        let field: String
    }

    /// The backend.
    public let storage: any RecordStorage
    /// The random 16-byte id bound into every sealed value of this store.
    public let storeId: Data
    /// The configuration.
    public let configuration: Configuration
    let keyring = Locked<Keyring?>(nil)
    /// The collections this handle has read: a collection's schema never changes and a collection
    /// is never removed, so each is read from the storage once (an add is then one transaction).
    private let knownCollections = Locked<[String: RecordSchema]>([:])
    /// The threads of `async` calls, started when the first one is made.
    let blockingCalls: BlockingCallPool
    /// The time-ordered ids of this handle: one generator per store handle, so that ids of
    /// different stores share no counter.
    private let timeOrderedIds = RecordIdentifiers()

    /// Opens the store in `storage`, creating it (a fresh random store id) when the storage is empty.
    public convenience init(storage: any RecordStorage, configuration: Configuration = .init()) throws(RecordsError) {
        try self.init(storage: storage, configuration: configuration, importing: nil)
    }

    /// Opens the store in `storage`; when the storage is empty, creates it with a fresh random id,
    /// or, for an import of an export of store `importedStoreId`, creates nothing: the import's
    /// transaction creates the store with that id (`RecordImportWriter.addStore`), so that an import
    /// that fails leaves the storage empty.
    init(storage: any RecordStorage, configuration: Configuration, importing importedStoreId: Data?) throws(RecordsError) {
        self.storage = storage
        self.configuration = configuration
        blockingCalls = BlockingCallPool(width: storage.concurrentCalls, name: "SecureRecords")
        if let metadata = try storage.loadMetadata() {
            storeId = metadata.storeId
        } else if let importedStoreId {
            storeId = importedStoreId
        } else {
            storeId = try storage.initialize(
                StoreMetadata(storeId: SecureRandom.bytes(count: 16), currentKeyId: nil, keys: [])).storeId
        }
        guard storeId.count == 16 else { throw .notARecordStore("the store id is not 16 bytes") }
    }

    /// Opens (creating) the SQLite store file at `path`.
    public convenience init(path: String, configuration: Configuration = .init()) throws(RecordsError) {
        try self.init(storage: try SQLiteRecordStorage(path: path), configuration: configuration)
    }

    // MARK: Keys

    /// Unwraps the store keys with `sealer`, creating (and storing, wrapped) the first store key when
    /// the store has none. Throws `storeKeyUnavailable` for a wrong or locked sealer.
    /// A store that had no key until this call (its first key is created here) may hold clear-only
    /// records written without a key: they are authenticated under the new key before it returns
    /// (if this is interrupted, those left are refused as unauthenticated from then on: the key is
    /// flagged from the start, so that no earlier wrap of it could switch authentication off). A
    /// store that holds keys but names no current key is refused (`storeKeyUnavailable`).
    public func unlock(with sealer: any ItemSealer) throws(RecordsError) {
        var metadata = try storage.loadMetadata() ?? StoreMetadata(storeId: storeId, currentKeyId: nil, keys: [])
        var created = false
        if metadata.currentKeyId == nil {
            guard metadata.keys.isEmpty else { throw .storeKeyUnavailable("the store holds keys but names no current key") }
            do throws(RecordsError) {
                try requireNoKeyedRecords()
            } catch .storeKeyUnavailable(let reason) {
                // Another client may have made the first key, and written under it, since the
                // metadata was read: then its key is the store's. Only a store that still has no
                // key holds records under a removed one.
                guard let now = try storage.loadMetadata(), now.currentKeyId != nil else { throw .storeKeyUnavailable(reason) }
                metadata = now
            }
        }
        if metadata.currentKeyId == nil {
            let key = SecretBytes.random(count: Envelope.keyByteCount)
            let wrapped = try wrap(key, id: 1, sealer: sealer)
            created = try storage.addKey(wrapped, makeCurrent: true)
            metadata = try storage.loadMetadata() ?? metadata
        }
        let ring = try unwrapKeys(metadata, sealer: sealer, generation: Self.unlocks.withLock { $0 += 1; return $0 })
        keyring.withLock { $0 = ring }
        if created { try resealRecords(notUnder: ring.current, sealer: sealer, adoptingUnkeyed: true) }
    }

    /// Counts unlocks, for `Keyring.generation`.
    private static let unlocks = Locked<UInt64>(0)

    /// The keyring of `metadata`'s keys, unwrapped with `sealer`.
    func unwrapKeys(
        _ metadata: StoreMetadata, sealer: any ItemSealer, generation: UInt64, allowingOlderCurrent: Bool = false
    ) throws(RecordsError) -> Keyring {
        guard let current = metadata.currentKeyId else { throw .storeKeyUnavailable("the store has no current key") }
        // Rotation adds each key with the next id and makes it current in one transaction, and an
        // import only moves the current key forward: a store naming an older key as current had it
        // moved back by a store writer, who would have new records written under a retired (perhaps
        // leaked) key and the next rotation re-seal the store back under it. (An import by an
        // earlier version could leave a store so too.) A rotation puts it right.
        if !allowingOlderCurrent, let latest = metadata.keyLaterThanCurrent {
            throw .storeKeyUnavailable(
                "the store names store key \(current) as current but holds the later key \(latest): its current key was moved back "
                    + "(rotate the store key to put it right: a new key is made current and every record re-sealed under it)")
        }
        var ring = Keyring(keys: [:], current: current, authenticating: [], macKeys: [:], sealer: sealer, generation: generation)
        for wrapped in metadata.keys {
            let (key, authenticates) = try unwrap(wrapped, sealer: sealer)
            ring.keys[wrapped.id] = key
            ring.macKeys[wrapped.id] = try RecordAuthentication.macKey(storeKey: key, storeId: storeId)
            if authenticates { ring.authenticating.insert(wrapped.id) }
        }
        guard ring.keys[current] != nil else { throw .storeKeyUnavailable("current key \(current) is missing") }
        return ring
    }

    /// Forgets the unwrapped store keys and the sealer that opened them (the keys are zeroed when
    /// no operation uses them any more).
    public func lock() { keyring.withLock { $0 = nil } }

    /// Whether the store key is available.
    public var isUnlocked: Bool { keyring.withLock { $0 != nil } }

    /// `key` wrapped by `sealer`: the plaintext is the 32 key bytes, followed by the authenticating
    /// flag when the key's records carry MACs (every key this version creates or re-wraps with it).
    func wrap(_ key: SecretBytes, id: UInt32, authenticates: Bool = true, sealer: any ItemSealer) throws(RecordsError) -> WrappedStoreKey {
        do {
            let wrapped = try key.withUnsafeBytes { bytes throws(SecureCoreError) in
                var plaintext = Data(bytes)
                defer { plaintext.resetBytes(in: 0..<plaintext.count) }
                if authenticates { plaintext.append(RecordAuthentication.authenticatingKeyFlag) }
                return try sealer.seal(plaintext, context: RecordContext.keyWrap(storeId: storeId, keyId: id))
            }
            return WrappedStoreKey(id: id, wrapped: wrapped)
        } catch {
            throw .storeKeyUnavailable("the sealer failed: \(error.description)")
        }
    }

    /// The key `wrapped` holds, and whether it authenticates its records (a key written before
    /// records were authenticated is the 32 key bytes alone).
    func unwrap(_ wrapped: WrappedStoreKey, sealer: any ItemSealer) throws(RecordsError) -> (key: SecretBytes, authenticates: Bool) {
        var bytes: Data
        do {
            bytes = try sealer.open(wrapped.wrapped, context: RecordContext.keyWrap(storeId: storeId, keyId: wrapped.id))
        } catch .locked {
            throw .storeKeyUnavailable("the sealer (vault) is locked")
        } catch {
            throw .storeKeyUnavailable("store key \(wrapped.id) does not open with this key or sealer")
        }
        defer { bytes.resetBytes(in: 0..<bytes.count) }
        switch bytes.count {
        case Envelope.keyByteCount:
            return (SecretBytes(bytes), false)
        case Envelope.keyByteCount + 1 where bytes.last == RecordAuthentication.authenticatingKeyFlag:
            return (SecretBytes(bytes.prefix(Envelope.keyByteCount)), true)
        default:
            throw .storeKeyUnavailable("store key \(wrapped.id) is not a 32-byte key with known flags")
        }
    }

    /// The unlocked keyring, or `storeKeyRequired`.
    func currentKeyring() throws(RecordsError) -> Keyring {
        guard let ring = keyring.withLock({ $0 }) else { throw .storeKeyRequired }
        return ring
    }

    /// The unlocked keyring as the store now stands: its keys unwrapped again with its sealer when
    /// the store names a later current key or holds a key it lacks (another client rotated since),
    /// so that new records go under the current key and a blind-index search covers every key. One
    /// read of the store's keys; `storeKeyRequired` when locked.
    func freshKeyring() throws(RecordsError) -> Keyring {
        try freshKeyring(writing: false)
    }

    /// For a write: `freshKeyring()`, except that keys which do not unwrap (a locked vault, a key
    /// row that is not one of this store's) are passed over while the store's current key is
    /// still the one this handle holds: the write goes under it. A newer current key that does
    /// not unwrap fails the write (`storeKeyUnavailable`): nothing is written under a retired key.
    func keyringForWriting() throws(RecordsError) -> Keyring {
        try freshKeyring(writing: true)
    }

    private func freshKeyring(writing: Bool) throws(RecordsError) -> Keyring {
        let ring = try currentKeyring()
        guard let metadata = try storage.loadMetadata(), let current = metadata.currentKeyId else { return ring }
        let superseded = try isSuperseded(ring.current, in: metadata)
        guard superseded || metadata.keys.contains(where: { ring.keys[$0.id] == nil }) else { return ring }
        do throws(RecordsError) {
            return try refreshed(ring, from: metadata)
        } catch .storeKeyUnavailable(_) where writing && current == ring.current {
            return ring
        }
    }

    /// Whether the store, as `metadata` describes it, names a later current key than `keyId` (then
    /// a write goes under that one). Throws `storeKeyUnavailable` when a store that names a current
    /// key no longer holds `keyId`: it was rolled back or changed.
    func isSuperseded(_ keyId: UInt32, in metadata: StoreMetadata?) throws(RecordsError) -> Bool {
        guard let metadata, let current = metadata.currentKeyId else { return false }
        guard metadata.keys.contains(where: { $0.id == keyId }) else {
            throw .storeKeyUnavailable("the store no longer holds store key \(keyId), which this handle was unlocked with: unlock it again")
        }
        return current > keyId
    }

    /// `ring` with `metadata`'s keys unwrapped by its sealer, installed unless the store was locked
    /// (`storeKeyRequired`) or unlocked anew meanwhile, or a refresh on another thread installed a
    /// later view (then that keyring is returned). The current key id only moves forward: rotation
    /// adds keys with higher ids, and a store whose current key was moved back below one it holds
    /// is refused (`unwrapKeys`).
    func refreshed(_ ring: Keyring, from metadata: StoreMetadata) throws(RecordsError) -> Keyring {
        let installing = try unwrapKeys(metadata, sealer: ring.sealer, generation: ring.generation)
        return try keyring.withLock { (installed: inout Keyring?) throws(RecordsError) -> Keyring in
            guard let held = installed else { throw .storeKeyRequired }
            guard held.generation == installing.generation, held.current <= installing.current,
                held.keys.keys.allSatisfy({ installing.keys[$0] != nil })
            else { return held }
            installed = installing
            return installing
        }
    }

    /// The blind-index key of `field` under store key `keyId` (cached while unlocked).
    func fieldKey(keyId: UInt32, collection: String, field: String) throws(RecordsError) -> SymmetricKey {
        let id = FieldKeyID(keyId: keyId, collection: collection, field: field)
        if let cached = keyring.withLock({ $0?.fieldKeys[id] }) { return cached }
        let ring = try currentKeyring()
        guard let storeKey = ring.keys[keyId] else { throw .storeKeyUnavailable("store key \(keyId) is unknown") }
        let key = try BlindIndex.fieldKey(storeKey: storeKey, storeId: storeId, collection: collection, field: field).symmetricKey
        keyring.withLock { $0?.fieldKeys[id] = key }
        return key
    }

    /// A sealer for store-keyed records of `collection` under the current store key, with the blind
    /// index keys of the fields `schema` indexes; `storeKeyRequired` when locked.
    func storeKeySealer(collection: String, schema: RecordSchema, ring: Keyring? = nil, expectedCount: Int) throws(RecordsError) -> StoreKeySealer {
        guard let ring = ring ?? keyring.withLock({ $0 }) else { throw .storeKeyRequired }
        guard let key = ring.keys[ring.current], let macKey = ring.macKeys[ring.current] else { throw .storeKeyRequired }
        var indexKeys: [String: SymmetricKey] = [:]
        for (name, protection) in schema.fields where protection == .sealedIndexed {
            indexKeys[name] = try fieldKey(keyId: ring.current, collection: collection, field: name)
        }
        return try StoreKeySealer(
            keyId: ring.current, storeKey: key, indexKeys: indexKeys, macKey: macKey, storeId: storeId,
            contextPrefix: RecordContext.sealedValuePrefix(storeId: storeId, collection: collection), expectedCount: expectedCount)
    }

    // MARK: Collections

    /// Declares `collection` with `schema`; doing it again with the same schema does nothing, with
    /// another throws `schemaMismatch`.
    /// A new collection's name is stored in NFC; an existing one is found whatever the
    /// normalization of `collection` (see `RecordNames`).
    public func createCollection(_ collection: String, schema: RecordSchema) throws(RecordsError) {
        try RecordSchema.validateName(collection, what: "collection")
        let all = try storage.collections()
        let name = all.index(forKey: collection).map { all[$0].key } ?? RecordNames.nfc(collection)
        let stored = try storage.createCollection(name, schema: schema)
        knownCollections.withLock { $0[name] = stored }
        guard stored == schema else { throw .schemaMismatch(collection: collection) }
    }

    /// The stored spelling of `collection` (canonically equivalent names are one name) and its
    /// schema, or `collectionNotFound`.
    func resolve(_ collection: String) throws(RecordsError) -> (name: String, schema: RecordSchema) {
        let known = knownCollections.withLock { $0 }
        if let index = known.index(forKey: collection) { return (known[index].key, known[index].value) }
        let all = try storage.collections()
        knownCollections.withLock { $0.merge(all) { first, _ in first } }
        guard let index = all.index(forKey: collection) else { throw .collectionNotFound(collection) }
        return (all[index].key, all[index].value)
    }

    /// Every collection and its schema.
    public func collections() throws(RecordsError) -> [String: RecordSchema] {
        try storage.collections()
    }

    /// The schema of `collection`, or `collectionNotFound`.
    public func schema(of collection: String) throws(RecordsError) -> RecordSchema {
        try resolve(collection).schema
    }

    // MARK: Records

    /// Builds the stored form of a record: seals the sealed fields, computes blind indexes and
    /// authenticates it (docs/FORMATS.md, "Record authentication").
    func seal(
        id: UUID, collection: String, schema: RecordSchema, fields: [String: FieldValue], sealing: RecordSealing
    ) throws(RecordsError) -> StoredRecord {
        var sealer: StoreKeySealer?
        return try seal(id: id, collection: collection, schema: schema, fields: fields, sealing: sealing, sealer: &sealer)
    }

    /// `seal`, reusing `sealer` for store-keyed records (made on first use when nil; it must be for
    /// `collection`). A store-keyed record is sealed and MACed under the current store key; only
    /// while the store is locked may a record with clear fields alone be left without key and MAC,
    /// which the caller allows only in a store with no key (`requireNoStoreKey`). A password record
    /// binds its clear fields into its sealed values' context; one with nothing to seal is stored
    /// as a store-keyed record (a password would protect nothing in it).
    func seal(
        id: UUID, collection: String, schema: RecordSchema, fields: [String: FieldValue], sealing: RecordSealing,
        sealer: inout StoreKeySealer?
    ) throws(RecordsError) -> StoredRecord {
        var clear: [String: FieldValue] = [:]
        var toSeal: [String: FieldValue] = [:]
        for (name, value) in fields {
            if try schema.protection(of: name, collection: collection).isSealed { toSeal[name] = value } else { clear[name] = value }
        }
        var record = StoredRecord(id: id, collection: collection, keying: .storeKey, keyId: nil, clear: clear, sealed: [:], blindIndexes: [:])
        switch sealing {
        case .password(let password) where !toSeal.isEmpty:
            guard password.count > 0 else { throw .crypto(.invalidParameter("the password is empty")) }
            record.keying = .password
            let writeId = SecureRandom.bytes(count: RecordAuthentication.writeIdByteCount)
            record.mac = writeId
            for (name, value) in toSeal {
                if schema.fields[name] == .sealedIndexed {
                    throw .fieldProtectionMismatch(
                        collection: collection, field: name,
                        reason: "a blind index is keyed by the store key; password records cannot set indexed fields")
                }
                record.sealed[name] = try FieldSealing.seal(
                    value, password: password, kdf: configuration.passwordKDF,
                    context: RecordAuthentication.passwordWriteContext(
                        storeId: storeId, collection: collection, record: id, field: name, clear: clear, sealedNames: toSeal.keys,
                        writeId: writeId))
            }
        case .storeKey, .password:
            if sealer == nil, !toSeal.isEmpty || isUnlocked {
                sealer = try storeKeySealer(collection: collection, schema: schema, expectedCount: max(1, toSeal.count))
            }
            guard var storeKeySealer = sealer else { break }  // locked, clear fields only: see above
            defer { sealer = storeKeySealer }
            for (name, value) in toSeal {
                record.sealed[name] = try storeKeySealer.seal(value, record: id, field: name)
                record.blindIndexes[name] = storeKeySealer.token(of: value, field: name)
            }
            storeKeySealer.authenticate(&record)
        }
        return record
    }

    /// The most bytes a record written now may hold (`Configuration.maximumRecordBytes`).
    var recordByteLimit: Int {
        min(max(0, configuration.maximumRecordBytes), Configuration.maximumRecordBytesCeiling)
    }

    /// Refuses, before anything is sealed, fields whose names and values alone take more than a
    /// record may hold (`recordTooLarge`): their stored form takes at least as much.
    func checkSize(of fields: [String: FieldValue]) throws(RecordsError) {
        var bytes = 0
        for (name, value) in fields { bytes += name.utf8.count + value.payloadCount }
        if bytes > recordByteLimit { throw .recordTooLarge(limit: recordByteLimit) }
    }

    /// Refuses a record whose stored form takes more than a record may hold (`recordTooLarge`).
    func checkSize(of record: StoredRecord) throws(RecordsError) {
        if Self.storedSize(of: record) > recordByteLimit { throw .recordTooLarge(limit: recordByteLimit) }
    }

    /// Refuses (`recordModified`) a record read back that takes more than any record is written
    /// with (`maximumRecordBytesCeiling`): a store writer made it so (PostgreSQL keeps each field in
    /// a row of its own), and the encodings its MAC and contexts are computed over hold 32-bit lengths.
    func checkReadSize(of record: StoredRecord) throws(RecordsError) {
        if Self.storedSize(of: record) > Configuration.maximumRecordBytesCeiling {
            throw .recordModified(record.id, reason: "it is larger than any record is written")
        }
    }

    /// The bytes of a record's stored form that the size limit counts.
    static func storedSize(of record: StoredRecord) -> Int {
        var bytes = record.mac?.count ?? 0
        for (name, value) in record.clear { bytes += name.utf8.count + value.payloadCount }
        for (name, sealed) in record.sealed { bytes += name.utf8.count + sealed.count }
        for (name, token) in record.blindIndexes { bytes += name.utf8.count + token.count }
        return bytes
    }

    /// The `SFR1` context of a sealed value (store-keyed records, and password records written
    /// before clear fields were bound).
    func context(_ collection: String, _ id: UUID, _ field: String) -> [UInt8] {
        RecordContext.sealedValue(storeId: storeId, collection: collection, record: id, field: field)
    }

    /// Adds a record to `collection`: fields the schema declares sealed are sealed with `sealing`,
    /// the others stored clear. Returns its id: `id` when given, otherwise a new one of the kind
    /// `configuration.recordIds` asks for (by default time-ordered, UUID version 7).
    @discardableResult
    public func add(
        _ fields: [String: FieldValue], to collection: String, sealing: RecordSealing = .storeKey, id: UUID? = nil
    ) throws(RecordsError) -> UUID {
        let id = id ?? newRecordIds(1)[0]
        let (collection, schema) = try resolve(collection)
        let fields = schema.respelled(fields)
        try checkSize(of: fields)
        // One transaction: the record is sealed under the key this handle holds, and the insert
        // checks the store's keys as it writes. When another client rotated meanwhile, it is
        // sealed again under the new current key (once per rotation met, a few times at most).
        for _ in 0..<Self.writeAttempts {
            let held = isUnlocked ? try currentKeyring().current : nil
            let record = try seal(id: id, collection: collection, schema: schema, fields: fields, sealing: sealing)
            try checkSize(of: record)
            if try storage.insert([record], ifAccepted: keyCheck(for: record, held: held)) { return id }
            try takeUpCurrentKey(refusedUnder: record.keyId)
        }
        throw Self.keyChangedAtEveryAttempt
    }

    /// How many times a write seals its records again under a key another client made current.
    static let writeAttempts = 8

    static let keyChangedAtEveryAttempt = RecordsError.storeKeyUnavailable(
        "the store's current key changed at each of \(writeAttempts) attempts to write; nothing was written")

    /// The check a write makes of the store's keys in its own transaction (the `ifAccepted` of
    /// `RecordStorage`'s conditional writes), so that what it writes under a store key goes under
    /// the current one: records sealed or authenticated under `keyId` are refused (false) when
    /// the store names a later current key. Records without key or MAC (`withoutKey`: a locked
    /// handle's clear fields) go only into a store with no key (`storeKeyRequired`). An unlocked
    /// handle (`held`: the key it writes under) refuses a store that no longer holds its key
    /// (`storeKeyUnavailable`), even for password records, which hold nothing under it.
    func keyCheck(under keyId: UInt32?, withoutKey: Bool, held: UInt32?) -> (StoreMetadata?) throws(RecordsError) -> Bool {
        { (metadata) throws(RecordsError) -> Bool in
            if withoutKey { try Self.requireNoStoreKey(in: metadata) }
            if let keyId { return try !self.isSuperseded(keyId, in: metadata) }
            if let held { _ = try self.isSuperseded(held, in: metadata) }
            return true
        }
    }

    /// `keyCheck(under:withoutKey:held:)` for writing `record` as sealed.
    func keyCheck(for record: StoredRecord, held: UInt32?) -> (StoreMetadata?) throws(RecordsError) -> Bool {
        keyCheck(under: record.keyId, withoutKey: record.keying == .storeKey && record.mac == nil, held: held)
    }

    /// After a write under `keyId` was refused because the store names a later current key (see
    /// `keyCheck`): takes that key up, or fails (`storeKeyUnavailable`) when this handle cannot.
    func takeUpCurrentKey(refusedUnder keyId: UInt32?) throws(RecordsError) {
        if let keyId, try keyringForWriting().current <= keyId {
            throw .storeKeyUnavailable("the store's current key is one this handle cannot take up: unlock it again")
        }
    }

    /// Adds several records to `collection` in one transaction (all or none); returns their ids in
    /// order (new ids of the kind `configuration.recordIds` asks for). Large batches are sealed on every core, a group of chunks at a time, while the storage
    /// writes the group sealed before.
    @discardableResult
    public func add(
        contentsOf records: [[String: FieldValue]], to collection: String, sealing: RecordSealing = .storeKey
    ) throws(RecordsError) -> [UUID] {
        let (collection, schema) = try resolve(collection)
        for fields in records { try checkSize(of: fields) }  // before any is sealed or sent
        @Sendable func hasSealedField(_ fields: [String: FieldValue]) -> Bool { fields.keys.contains { schema.fields[$0]?.isSealed == true } }
        var sealsWithStoreKey = false
        if case .storeKey = sealing { sealsWithStoreKey = records.contains(where: hasSealedField) }
        // Under the current key, if another client rotated; `storeKeyRequired` when locked and needed.
        if sealsWithStoreKey || isUnlocked { _ = try keyringForWriting() }
        let unlocked = isUnlocked
        // Store-keyed records: all of them when sealing with the store key, and those with nothing
        // to seal (a password would protect nothing in them).
        var storeKeyed = true
        if case .password = sealing { storeKeyed = records.contains(where: { !hasSealedField($0) }) }
        if !unlocked, storeKeyed { try requireNoStoreKey() }
        let ids = newRecordIds(records.count)
        let chunk = 256
        let chunks = (records.count + chunk - 1) / chunk
        let sealedFields = schema.fields.values.filter(\.isSealed).count
        for _ in 0..<Self.writeAttempts {
            // Every chunk is sealed under this keyring's current key, the one the write checks.
            let ring = unlocked ? try currentKeyring() : nil
            let sealChunk = { @Sendable (index: Int) throws(RecordsError) -> [StoredRecord] in
                let range = index * chunk..<min(records.count, (index + 1) * chunk)
                var sealer = try ring.map { (ring) throws(RecordsError) in
                    try self.storeKeySealer(collection: collection, schema: schema, ring: ring, expectedCount: max(1, range.count * sealedFields))
                }
                var rows: [StoredRecord] = []
                rows.reserveCapacity(range.count)
                for i in range {
                    let row = try self.seal(
                        id: ids[i], collection: collection, schema: schema, fields: schema.respelled(records[i]), sealing: sealing,
                        sealer: &sealer)
                    try self.checkSize(of: row)
                    rows.append(row)
                }
                return rows
            }
            let keyId = storeKeyed ? ring?.current : nil
            let check = keyCheck(under: keyId, withoutKey: storeKeyed && !unlocked, held: ring?.current)
            if chunks <= 1 {
                if try storage.insert(chunks == 0 ? [] : try sealChunk(0), ifAccepted: check) { return ids }
                try takeUpCurrentKey(refusedUnder: keyId)
                continue
            }
            // Groups of one chunk per core are sealed in a fork-join, while the group before is
            // inserted alongside (the storage writes on one core's turn).
            let width = ProcessInfo.processInfo.activeProcessorCount
            let inserted = try storage.insertInOneTransaction(ifAccepted: check) { (insert) throws(RecordsError) in
                var sealed: [[StoredRecord]] = []
                for first in stride(from: 0, to: chunks, by: width) {
                    let group = first..<min(chunks, first + width)
                    let slots = ResultSlots<Result<[StoredRecord], RecordsError>?>(count: group.count, initialValue: nil)
                    let ready = sealed
                    try ForkJoin.run(group.count, alongside: { () throws(RecordsError) in for batch in ready { try insert(batch) } }) { i in
                        slots[i] = Result { () throws(RecordsError) in try sealChunk(group.lowerBound + i) }
                    }
                    sealed = try (0..<slots.count).map { (i) throws(RecordsError) in try slots[i]!.get() }
                }
                for batch in sealed { try insert(batch) }
            }
            if inserted { return ids }
            try takeUpCurrentKey(refusedUnder: keyId)
        }
        throw Self.keyChangedAtEveryAttempt
    }

    /// `count` ids for new records, of the kind the configuration asks for.
    func newRecordIds(_ count: Int) -> [UUID] {
        switch configuration.recordIds {
        case .timeOrdered: return timeOrderedIds.make(count)
        case .random: return (0..<count).map { _ in UUID() }
        }
    }

    /// The record with `id`, sealed fields not opened.
    public func record(_ id: UUID) throws(RecordsError) -> Record {
        Record(try stored(id))
    }

    /// The stored record `id`, checked against its authentication when the store is unlocked.
    /// A storage that answers with another record (a server that lies, a view in front of the
    /// table) is refused whether or not the store is unlocked: that record's MAC would check, and
    /// an update would then authenticate a change to it.
    func stored(_ id: UUID) throws(RecordsError) -> StoredRecord {
        guard let stored = try storage.record(id) else { throw .recordNotFound(id) }
        guard stored.id == id else { throw .recordModified(id, reason: "the store returned record \(stored.id) for it") }
        try checkFieldNames(of: stored)
        if let ring = keyring.withLock({ $0 }) { try verify(stored, ring: ring) }
        return stored
    }

    /// The record with every sealed field opened: with `password` for a password record, with the
    /// store key otherwise. A wrong password or key, or a moved or modified value, throws
    /// `authenticationFailed` and returns no plaintext.
    public func open(_ id: UUID, password: SecretBytes? = nil) throws(RecordsError) -> Record {
        let stored = try stored(id)
        return Record(stored, opened: try openFields(stored, password: password))
    }

    func openFields(_ stored: StoredRecord, password: SecretBytes?) throws(RecordsError) -> [String: FieldValue] {
        var opened: [String: FieldValue] = [:]
        var storeKey: SecretBytes?
        switch stored.keying {
        case .password:
            guard let password else { throw .passwordRequired(stored.id) }
            try checkReadSize(of: stored)
            try checkPasswordRecordMarker(stored)
            if stored.bindsItsWrite, stored.sealed.isEmpty {
                throw .recordModified(stored.id, reason: "its sealed values were removed")
            }
            for (name, sealed) in stored.sealed.sorted(by: { $0.key < $1.key }) {
                let context =
                    if let writeId = stored.mac, stored.bindsItsWrite {
                        RecordAuthentication.passwordWriteContext(
                            storeId: storeId, collection: stored.collection, record: stored.id, field: name, clear: stored.clear,
                            sealedNames: stored.sealed.keys, writeId: writeId)
                    } else if stored.bindsClearFields {
                        RecordAuthentication.passwordValueContext(
                            storeId: storeId, collection: stored.collection, record: stored.id, field: name, clear: stored.clear)
                    } else {
                        context(stored.collection, stored.id, name)
                    }
                opened[name] = try FieldSealing.open(
                    sealed, storeKey: nil, password: password, limits: configuration.kdfLimits, context: context, record: stored.id, field: name)
            }
            return opened
        case .storeKey:
            if !stored.sealed.isEmpty {
                let ring = try currentKeyring()
                guard let keyId = stored.keyId, let key = ring.keys[keyId] else {
                    throw .storeKeyUnavailable("store key \(stored.keyId.map(String.init) ?? "none") is unknown")
                }
                storeKey = key
            }
        }
        for (name, sealed) in stored.sealed.sorted(by: { $0.key < $1.key }) {
            opened[name] = try FieldSealing.open(
                sealed, storeKey: storeKey, password: nil, limits: configuration.kdfLimits,
                context: context(stored.collection, stored.id, name), record: stored.id, field: name)
        }
        return opened
    }

    /// Sets (or adds) the fields in `setting` and removes those in `removing`, in one write. The
    /// record is checked first (when the store is unlocked) and authenticated again as written.
    /// A store-keyed record needs the unlocked store (unless the store has no key yet); setting a
    /// sealed field re-seals every sealed field under the current key. A password record needs its
    /// `password` (checked against the record first) to set a sealed field, or to change a clear
    /// field its sealed values bind; given the password, an older password record is re-sealed to
    /// bind its clear fields.
    public func update(
        _ id: UUID, setting: [String: FieldValue], removing: Set<String> = [], password: SecretBytes? = nil
    ) throws(RecordsError) {
        try checkSize(of: setting)
        if isUnlocked { _ = try keyringForWriting() }  // re-sealing goes under the current key
        try readModifyWrite(id) { (current) throws(RecordsError) -> StoredRecord in
            let schema = try schema(of: current.collection)
            let setting = schema.respelled(setting)
            let removing = Set(removing.map { schema.storedName(of: $0) ?? $0 })
            for name in removing { _ = try schema.protection(of: name, collection: current.collection) }
            var sealedSetting: [String: FieldValue] = [:]
            var updated = current
            for (name, value) in setting {
                if try schema.protection(of: name, collection: current.collection).isSealed {
                    sealedSetting[name] = value
                } else {
                    updated.clear[name] = value
                }
            }
            for name in removing {
                updated.clear[name] = nil
                updated.sealed[name] = nil
                updated.blindIndexes[name] = nil
            }
            switch current.keying {
            case .password where updated.sealed.isEmpty && sealedSetting.isEmpty:
                // Nothing sealed is left: a password would protect nothing, so the record becomes store-keyed.
                updated.keying = .storeKey
                updated.keyId = nil
                updated.mac = nil
                try authenticateOrRequireNoStoreKey(&updated)
            case .password:
                // A record that binds its write is sealed anew for any change (its values bind its
                // clear fields and the names of its sealed fields); an older one is brought up to
                // that when its password is given.
                let clearChanged = updated.clear != current.clear
                let sealedRemoved = updated.sealed.count != current.sealed.count
                if !sealedSetting.isEmpty || (clearChanged && current.bindsClearFields) || (sealedRemoved && current.bindsItsWrite)
                    || (password != nil && !current.bindsItsWrite)
                {
                    guard let password else { throw .passwordRequired(id) }
                    try checkKeepsProtection(of: current, under: schema)
                    let opened = try openFields(current, password: password)  // the password must be the record's
                    let fields = opened.filter { !removing.contains($0.key) }.merging(sealedSetting) { _, new in new }
                    updated = try seal(
                        id: id, collection: current.collection, schema: schema, fields: fields.merging(updated.clear) { sealed, _ in sealed },
                        sealing: .password(password))
                }
            case .storeKey where !sealedSetting.isEmpty:
                try checkKeepsProtection(of: current, under: schema)
                let opened = try openFields(current, password: nil)
                let fields = opened.filter { !removing.contains($0.key) }.merging(sealedSetting) { _, new in new }
                updated = try seal(
                    id: id, collection: current.collection, schema: schema, fields: fields.merging(updated.clear) { sealed, _ in sealed },
                    sealing: .storeKey)
            case .storeKey:
                try authenticateOrRequireNoStoreKey(&updated)
            }
            try checkSize(of: updated)
            return updated
        }
    }

    /// Reads record `id`, passes it to `change`, and writes what `change` returns only if the
    /// stored record is still the one read (`RecordStorage.replace(_:ifUnchangedFrom:)`), so that
    /// no concurrent write (another client's update, a key rotation's re-seal) is overwritten;
    /// when it changed meanwhile, reads it again and starts over (`recordNotFound` once deleted).
    private func readModifyWrite(_ id: UUID, _ change: (StoredRecord) throws(RecordsError) -> StoredRecord) throws(RecordsError) {
        for _ in 0..<Self.readModifyWriteAttempts {
            let held = isUnlocked ? try currentKeyring().current : nil
            let current = try stored(id)
            let updated = try change(current)
            // Only a record moved to another key than the one it was read under needs the store's
            // current key checked: one that stays under its key is covered by the comparison (a
            // rotation that has finished since rewrote it).
            let movedTo = updated.keyId != current.keyId ? updated.keyId : nil
            let check = keyCheck(under: movedTo, withoutKey: updated.keying == .storeKey && updated.mac == nil, held: held)
            guard let skipped = try storage.replace([updated], ifUnchangedFrom: [current], ifAccepted: check) else {
                try takeUpCurrentKey(refusedUnder: movedTo)
                continue
            }
            if skipped.isEmpty { return }
        }
        throw .storage(StorageFailure(
            .server(sqlState: "40001"),
            "record \(id) (or the store's current key) was changed by other writers during each of \(Self.readModifyWriteAttempts) attempts to update it; nothing was written"))
    }

    /// How many times a read-modify-write starts over before it gives up.
    static let readModifyWriteAttempts = 64

    /// Deletes the record; `recordNotFound` when it does not exist.
    public func delete(_ id: UUID) throws(RecordsError) {
        guard try storage.delete(id) else { throw .recordNotFound(id) }
    }

    /// Re-seals every sealed field of a password record under `newPassword`, in one write. The old
    /// password must open the record (else `authenticationFailed`, nothing changed).
    public func changePassword(of id: UUID, from oldPassword: SecretBytes, to newPassword: SecretBytes) throws(RecordsError) {
        try readModifyWrite(id) { (current) throws(RecordsError) -> StoredRecord in
            guard current.keying == .password else {
                throw .fieldProtectionMismatch(
                    collection: current.collection, field: "*", reason: "the record is sealed with the store key, not a password")
            }
            let schema = try schema(of: current.collection)
            try checkKeepsProtection(of: current, under: schema)
            let opened = try openFields(current, password: oldPassword)
            return try seal(
                id: id, collection: current.collection, schema: schema, fields: opened.merging(current.clear) { sealed, _ in sealed },
                sealing: .password(newPassword))
        }
    }

    // MARK: Search

    /// Records of `collection` (every collection when nil) matching all `conditions`, clear fields
    /// only: nothing is decrypted. Names match whatever their normalization (`RecordNames`). Equality on a sealed field uses its blind index (store unlocked).
    public func search(in collection: String? = nil, _ conditions: [RecordCondition] = []) throws(RecordsError) -> [Record] {
        for _ in 0..<Self.searchAttempts {
            let (records, indexRing) = try search(in: collection, conditions, ring: keyring.withLock { $0 })
            // A blind-index search under the keys read before it: a rotation that added a key
            // meanwhile may have moved matching records under it, so the search runs again.
            guard let indexRing, let metadata = try storage.loadMetadata(),
                metadata.keys.contains(where: { indexRing.keys[$0.id] == nil })
            else { return records }
        }
        throw .storeKeyUnavailable("the store's keys changed during each of \(Self.searchAttempts) attempts to search it by blind index")
    }

    /// How many times a blind-index search runs before it gives up on keys that keep changing.
    static let searchAttempts = 8

    /// One search, checking records with `ring` (nil when locked); and the keyring its blind-index
    /// tokens were computed with (read fresh from the store), if it used a blind index.
    private func search(
        in collection: String?, _ conditions: [RecordCondition], ring: Keyring?
    ) throws(RecordsError) -> (records: [Record], indexRing: Keyring?) {
        var indexRing: Keyring?
        let all = try storage.collections()
        let names: [String]
        if let collection {
            guard let index = all.index(forKey: collection) else { throw .collectionNotFound(collection) }
            names = [all[index].key]
        } else {
            names = all.keys.sorted()
        }
        var result: [Record] = []
        collections: for name in names {
            guard let schema = all[name] else { continue }
            var query = StorageQuery(collection: name)
            var fullText: FullTextQuery?
            for condition in conditions {
                switch condition.respelled(for: schema) {
                case .equals(let field, let value):
                    guard let protection = schema.fields[field] else {
                        if collection != nil { throw .unknownField(collection: name, field: field) }
                        continue collections
                    }
                    switch protection {
                    case .clear:
                        query.equals.append((field, value))
                    case .sealed:
                        throw .fieldProtectionMismatch(
                            collection: name, field: field, reason: "sealed without a blind index; it cannot be searched")
                    case .sealedIndexed:
                        let ring: Keyring
                        if let indexRing { ring = indexRing } else { ring = try freshKeyring() }
                        indexRing = ring
                        var tokens: [StorageQuery.Token] = []
                        for keyId in ring.keys.keys.sorted() {
                            let key = try fieldKey(keyId: keyId, collection: name, field: field)
                            tokens.append(.init(keyId: keyId, token: BlindIndex.token(of: value, fieldKey: key)))
                        }
                        query.blindIndexes.append((field, tokens))
                    }
                case .prefix(let field, let prefix):
                    guard let protection = schema.fields[field] else {
                        if collection != nil { throw .unknownField(collection: name, field: field) }
                        continue collections
                    }
                    guard protection == .clear else {
                        throw .fieldProtectionMismatch(collection: name, field: field, reason: "sealed fields have no prefix search")
                    }
                    query.prefixes.append((field, prefix))
                case .fullText(let text):
                    guard query.fullText == nil else { throw .invalidQuery("give one full-text query") }
                    fullText = try FullTextQuery(text)  // refused here alike for every backend
                    query.fullText = text
                }
            }
            let found = try storage.search(query)
            var seen = Set<UUID>()
            for stored in found {
                guard seen.insert(stored.id).inserted else {
                    throw .recordModified(stored.id, reason: "the store returned it twice for one search")
                }
                try checkFieldNames(of: stored)
                if let ring { try verify(stored, ring: ring) }
                try check(stored, matches: query, fullText: fullText)
            }
            result += found.map { Record($0) }
        }
        return (result, indexRing)
    }
}

extension RecordCondition {
    /// The condition with its field name in `schema`'s spelling.
    func respelled(for schema: RecordSchema) -> RecordCondition {
        switch self {
        case .equals(let field, let value): .equals(field: schema.storedName(of: field) ?? field, value: value)
        case .prefix(let field, let prefix): .prefix(field: schema.storedName(of: field) ?? field, prefix: prefix)
        case .fullText: self
        }
    }
}
