import Foundation
import SecureCore

extension RecordStore {
    /// Rotates the store key: adds a new random store key (wrapped by `sealer`) and makes it current,
    /// then re-seals every store-keyed record and recomputes its blind indexes under it, a batch of
    /// records per transaction. Each row records the key id it uses, so an interruption (crash,
    /// SIGKILL) leaves every record openable with exactly one key; calling again first finishes the
    /// interrupted rotation (`resumed`) instead of adding another key. Old keys stay in the store
    /// (wrapped), so old exports still import into a new store (into this one only while its keys
    /// are wrapped as in the export: a re-wrap changes that).
    @discardableResult
    public func rotateStoreKey(with sealer: any ItemSealer, afterBatch: ((Int) -> Void)? = nil) throws(RecordsError) -> KeyRotation {
        let madeKeyCurrentAgain = try addKeyPastAnOlderCurrentKey(with: sealer)
        try unlock(with: sealer)
        var ring = try currentKeyring()
        // A rotation is resumed only onto a key that authenticates: rotating a store made by an
        // older version adds such a key even when records remain on another.
        var resumed = false
        if ring.currentKeyAuthenticates, !madeKeyCurrentAgain {
            resumed = !(try storage.records(withKeyIdOtherThan: ring.current, after: 0, limit: 1).records.isEmpty)
        }
        if !resumed, !madeKeyCurrentAgain {
            try addCurrentKey(after: ring.keys.keys.max() ?? 0, sealer: sealer)
            try unlock(with: sealer)
            ring = try currentKeyring()
        }
        let (target, resealed) = try resealRecords(notUnder: ring.current, sealer: sealer, afterBatch: afterBatch)
        return KeyRotation(keyId: target, resealed: resealed, resumed: resumed)
    }

    /// For a store that names an older key as current than one it holds (which `unlock` refuses:
    /// moved back by a store writer, or left so by an import of an earlier version): once `sealer`
    /// opens every key, adds a new key and makes it current, so that the rotation goes on onto it
    /// (never onto the older key). Returns whether it did.
    private func addKeyPastAnOlderCurrentKey(with sealer: any ItemSealer) throws(RecordsError) -> Bool {
        guard let metadata = try storage.loadMetadata(), let latest = metadata.keyLaterThanCurrent else { return false }
        _ = try unwrapKeys(metadata, sealer: sealer, generation: 0, allowingOlderCurrent: true)
        try addCurrentKey(after: latest, sealer: sealer)
        return true
    }

    /// Adds a new random key, wrapped by `sealer`, with the first id past `latest` that no other
    /// process took meanwhile, and makes it current.
    private func addCurrentKey(after latest: UInt32, sealer: any ItemSealer) throws(RecordsError) {
        var newId = latest + 1
        while true {
            let key = SecretBytes.random(count: Envelope.keyByteCount)
            if try storage.addKey(try wrap(key, id: newId, sealer: sealer), makeCurrent: true) { return }
            newId += 1  // another process added this id meanwhile
        }
    }

    /// Re-seals, re-indexes and re-authenticates every record not under the current key (starting
    /// from `target`), a batch per transaction, each checked against its authentication first (so a
    /// rotation never launders a record changed behind the store's back). Store-keyed records
    /// without MAC (written by an older version, or while the store had no key) are adopted as
    /// they are only while the store still holds a key that does not authenticate, or when
    /// `adoptingUnkeyed`. Returns the key the records are now under and how many were rewritten.
    @discardableResult
    func resealRecords(
        notUnder target: UInt32, sealer: any ItemSealer, adoptingUnkeyed: Bool = false, afterBatch: ((Int) -> Void)? = nil
    ) throws(RecordsError)
        -> (target: UInt32, resealed: Int)
    {
        var ring = try currentKeyring()
        var target = target
        var resealed = 0
        // Batches are paged by insertion position (a record keeps its position when re-sealed).
        // A pass that ends is followed by one from the start, which must find nothing, so records
        // another process wrote under an older key behind the position are rotated too. A key
        // another process made current meanwhile (it rotated again) is taken up, from the start.
        var position: Int64 = 0
        while true {
            if try storage.loadMetadata()?.currentKeyId != ring.current {
                try unlock(with: sealer)
                ring = try currentKeyring()
            }
            if ring.current != target { position = 0 }
            target = ring.current
            let (batch, last) = try storage.records(withKeyIdOtherThan: target, after: position, limit: configuration.rotationBatchSize)
            if batch.isEmpty {
                if position == 0 { break }
                position = 0
                continue
            }
            position = last
            if batch.contains(where: { $0.keyId.map { ring.keys[$0] == nil } ?? false }) {
                try unlock(with: sealer)  // a key another process added since
                ring = try currentKeyring()
            }
            let adopting = adoptingUnkeyed || ring.authenticating.count < ring.keys.count
            // The schemas once per batch (a query per record cost more than the re-sealing).
            let schemas = try storage.collections()
            var updated: [StoredRecord] = []
            updated.reserveCapacity(batch.count)
            for record in batch { updated.append(try reseal(record, schemas: schemas, ring: ring, adoptingUnkeyed: adopting)) }
            // A record another client changed or deleted since the page was read is left alone
            // (its write stands): the pass from the start finds it again if it is still not under
            // the current key. A batch is written only while `target` is current (checked in its
            // transaction): once another rotation has made a later key current, none of this one's
            // batches lands under an older key; the next turn takes the later key up.
            let unchanged: (StoreMetadata?) throws(RecordsError) -> Bool = { $0?.currentKeyId == target }
            guard let skipped = try storage.replace(updated, ifUnchangedFrom: batch, ifAccepted: unchanged) else { continue }
            resealed += updated.count - skipped.count
            afterBatch?(resealed)
        }
        try authenticateOlderKeys(sealer: sealer)
        return (target, resealed)
    }

    /// Once every record is under the current, authenticating key with a MAC, re-wraps the store's
    /// older keys (from before records were authenticated) with the authenticating flag.
    private func authenticateOlderKeys(sealer: any ItemSealer) throws(RecordsError) {
        let ring = try currentKeyring()
        let older = ring.keys.keys.filter { !ring.authenticating.contains($0) }.sorted()
        guard ring.currentKeyAuthenticates, !older.isEmpty else { return }
        var rewrapped: [WrappedStoreKey] = []
        for id in older {
            guard let key = ring.keys[id] else { continue }
            rewrapped.append(try wrap(key, id: id, authenticates: true, sealer: sealer))
        }
        try storage.rewrapKeys(rewrapped)
        try unlock(with: sealer)
    }

    /// `record` re-sealed, re-indexed and authenticated under the current store key (sealed values
    /// of password records are untouched; they carry no store key), after checking it; `schemas`
    /// are the store's collections.
    func reseal(
        _ record: StoredRecord, schemas: [String: RecordSchema], ring: Keyring, adoptingUnkeyed: Bool
    ) throws(RecordsError) -> StoredRecord {
        // Adopted unchecked: a record without MAC under no key or an unflagged one, as an older
        // version or a keyless store wrote it; never one whose key requires a MAC.
        let older = record.keying == .storeKey && record.mac == nil && !(record.keyId.map(ring.authenticating.contains) ?? false)
        try checkFieldNames(of: record)
        if !(older && adoptingUnkeyed) { try verify(record, ring: ring) }
        guard record.keying == .storeKey else {
            var copy = record
            copy.keyId = nil
            copy.blindIndexes = [:]
            return copy
        }
        guard let schema = schemas[record.collection] else { throw .collectionNotFound(record.collection) }
        try checkKeepsProtection(of: record, under: schema)
        let opened = try openFields(record, password: nil)
        return try seal(
            id: record.id, collection: record.collection, schema: schema, fields: opened.merging(record.clear) { sealed, _ in sealed },
            sealing: .storeKey)
    }
}
