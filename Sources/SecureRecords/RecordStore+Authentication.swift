import Crypto
import Foundation
import SecureCore

// Checking what the storage returns against the records' authentication (docs/FORMATS.md,
// "Record authentication"; docs/SECURITY.md says what a store writer can still do unseen).
extension RecordStore {
    /// Throws `storeKeyRequired` unless the store has no key yet: once it has one, every
    /// store-keyed record is written with a MAC, which needs the unlocked store.
    func requireNoStoreKey() throws(RecordsError) {
        try Self.requireNoStoreKey(in: try storage.loadMetadata())
    }

    /// `requireNoStoreKey()` for the store `metadata` describes.
    static func requireNoStoreKey(in metadata: StoreMetadata?) throws(RecordsError) {
        if metadata?.currentKeyId != nil { throw .storeKeyRequired }
    }

    /// Throws `storeKeyUnavailable` when a record carries a key id or a MAC: a store with no key
    /// cannot hold one, unless its keys were removed, and a first key made then would adopt the
    /// records without key as its own. Reads the whole store once (before its first key).
    func requireNoKeyedRecords() throws(RecordsError) {
        var position: Int64 = 0
        while true {
            let (page, last) = try storage.allRecords(after: position, limit: 1_000)
            if page.isEmpty { return }
            if page.contains(where: { $0.keyId != nil || ($0.keying == .storeKey && $0.mac != nil) }) {
                throw .storeKeyUnavailable("the store holds records under a key but no key: its keys were removed")
            }
            position = last
        }
    }

    /// MACs a store-keyed record under its own key (the current key for a record without one); with
    /// the store locked, leaves it without MAC if the store has no key yet, else `storeKeyRequired`.
    func authenticateOrRequireNoStoreKey(_ record: inout StoredRecord) throws(RecordsError) {
        guard let ring = keyring.withLock({ $0 }) else {
            try requireNoStoreKey()
            return
        }
        let keyId = record.keyId ?? ring.current
        guard let key = ring.macKeys[keyId] else { throw .storeKeyUnavailable("store key \(keyId) is unknown") }
        record.keyId = keyId
        record.mac = RecordAuthentication.mac(of: record, keyId: keyId, storeId: storeId, key: key)
    }

    /// Checks a record the storage returned against its authentication, with the unlocked keys:
    /// `recordModified` naming it when a store-keyed record's MAC does not match (a clear field,
    /// token, sealed value or key id was changed), or when a record that must carry a MAC has
    /// none. A record without MAC passes unchecked only while no key of the store authenticates (a
    /// store made by an older version, not yet rotated). A password record's clear
    /// fields are checked when it is opened with its password (its sealed values' context binds
    /// them). A key id this handle does not know, but the store now holds (another process
    /// rotated since this one unlocked), is unwrapped with the sealer that unlocked the store, and
    /// the record checked under it.
    func verify(_ stored: StoredRecord, ring: Keyring) throws(RecordsError) {
        func modified(_ reason: String) -> RecordsError { .recordModified(stored.id, reason: reason) }
        try checkReadSize(of: stored)
        // A key another client added: unwrapped, and the record checked again under it.
        func verifyUnderNewerKey(_ keyId: UInt32) throws(RecordsError) {
            // Another record of the same search may have brought the key in already.
            if let installed = keyring.withLock({ $0 }), installed.generation == ring.generation, installed.keys[keyId] != nil {
                return try verify(stored, ring: installed)
            }
            guard let metadata = try storage.loadMetadata(), metadata.keys.contains(where: { $0.id == keyId }) else {
                throw modified("it names store key \(keyId), which the store does not hold")
            }
            let fresh = try refreshed(ring, from: metadata)
            guard fresh.keys[keyId] != nil else { throw .storeKeyUnavailable("store key \(keyId) could not be unwrapped") }
            try verify(stored, ring: fresh)
        }
        switch stored.keying {
        case .password:
            try checkPasswordRecordMarker(stored)
            if stored.sealed.isEmpty, ring.authenticatesRecords || stored.bindsItsWrite {
                throw modified("a password record without sealed values, which this store never writes")
            }
        case .storeKey:
            if let mac = stored.mac {
                guard let keyId = stored.keyId else { throw modified("it carries a MAC but no key id") }
                guard let key = ring.macKeys[keyId] else { return try verifyUnderNewerKey(keyId) }
                guard RecordAuthentication.isValid(mac, of: stored, keyId: keyId, storeId: storeId, key: key) else {
                    throw modified("its MAC does not match: a clear field, blind-index token, sealed value or key id was changed")
                }
            } else if let keyId = stored.keyId, ring.authenticating.contains(keyId) {
                throw modified("its MAC was removed")
            } else if ring.authenticatesRecords {
                if let keyId = stored.keyId, ring.keys[keyId] == nil { return try verifyUnderNewerKey(keyId) }
                if stored.keyId == nil { throw modified(Self.withoutKeyInAnAuthenticatingStore) }
                throw modified(
                    "it carries no MAC in a store that authenticates its records "
                        + "(if a key rotation of a store made by an older version was interrupted, run it again)")
            }
        }
    }

    /// Throws `recordModified` when `stored` holds a field name both clear and sealed. No writer
    /// of this library does; a clear value planted beside a sealed one of the same name would be
    /// read in its place, unchecked (a password record's clear fields are checked only when it is
    /// opened, and a locked store checks no MAC). Checked on every read, locked or not.
    func checkFieldNames(of stored: StoredRecord) throws(RecordsError) {
        if let name = stored.clear.keys.sorted().first(where: { stored.sealed[$0] != nil }) {
            throw .recordModified(stored.id, reason: "field '\(name)' is stored both clear and sealed")
        }
    }

    /// Why a store-keyed record with neither key id nor MAC is refused once the store authenticates
    /// its records. Either a store writer added it, or it was added before the store's first key
    /// and the first unlock was cut short before authenticating it; the two cannot be told apart
    /// (adopting such records later would adopt a writer's too), so the way out is to add it again.
    static let withoutKeyInAnAuthenticatingStore =
        "it carries neither key id nor MAC in a store that authenticates its records (added by a store writer, "
        + "or before the store's first key by a first unlock cut short: check it and add it again)"

    /// Throws `recordModified` when a password record's stored `mac` is none of the markers of how
    /// its values are bound: none (`SFR1`), empty (`SFR2`) or a write id (`SFR3`). (A store writer
    /// who changes one marker into another gains nothing: the values were sealed with one context.)
    func checkPasswordRecordMarker(_ stored: StoredRecord) throws(RecordsError) {
        guard let mac = stored.mac, !mac.isEmpty, mac.count != RecordAuthentication.writeIdByteCount else { return }
        throw .recordModified(stored.id, reason: "a password record carries a MAC")
    }

    /// Throws `recordModified` unless `stored` meets every condition of `query`, whose full-text
    /// condition is `fullText` parsed (the storage found it through index rows it keeps apart from
    /// the record, which a store writer may change).
    func check(_ stored: StoredRecord, matches query: StorageQuery, fullText: FullTextQuery?) throws(RecordsError) {
        func mismatch(_ what: String) -> RecordsError {
            .recordModified(stored.id, reason: "the store's search index disagrees with the record (\(what))")
        }
        guard stored.collection == query.collection else { throw mismatch("it is in collection '\(stored.collection)'") }
        for (field, value) in query.equals where stored.clear[field] != value { throw mismatch("field '\(field)'") }
        for (field, prefix) in query.prefixes {
            guard let text = stored.clear[field]?.string, text.utf8.starts(with: prefix.utf8) else { throw mismatch("field '\(field)'") }
        }
        for (field, tokens) in query.blindIndexes {
            // Password records have no blind indexes (FORMATS.md): one that claims a token was planted.
            guard stored.keying == .storeKey, let keyId = stored.keyId, let token = stored.blindIndexes[field],
                tokens.contains(where: { $0.keyId == keyId && $0.token == token })
            else { throw mismatch("the blind index of '\(field)'") }
        }
        if let fullText, !fullText.matches(FullText.indexedTerms(stored.fullText)) {
            throw mismatch("full text")
        }
    }

    /// Throws `fieldProtectionMismatch` when sealing `record`'s fields anew under `schema` (a key
    /// rotation, an update, a password change) would lower a protection the record has: a field
    /// it holds sealed that the schema declares clear (its value would be written in clear), or a
    /// sealed field without a blind index that the schema declares indexed (its equalities would
    /// be published). The schema row is not authenticated: a store writer who edits it may change
    /// what a later `add` does (SECURITY.md), but not make a re-seal disclose a stored value.
    func checkKeepsProtection(of record: StoredRecord, under schema: RecordSchema) throws(RecordsError) {
        for name in record.sealed.keys.sorted() {
            switch try schema.protection(of: name, collection: record.collection) {
            case .clear:
                throw .fieldProtectionMismatch(
                    collection: record.collection, field: name,
                    reason: "the record holds it sealed, but the stored schema declares it clear (the schema row was changed); the record was left as stored")
            case .sealedIndexed where record.keying == .storeKey && record.blindIndexes[name] == nil:
                throw .fieldProtectionMismatch(
                    collection: record.collection, field: name,
                    reason: "the record holds it sealed without a blind index, but the stored schema declares one (the schema row was changed); the record was left as stored")
            case .sealed, .sealedIndexed:
                break
            }
        }
    }
}
