import Foundation
import SecureCore

extension RecordStore {
    /// Rotates the store key: adds a new random store key (wrapped by `sealer`) and makes it current,
    /// then re-seals every store-keyed record and recomputes its blind indexes under it, a batch of
    /// records per transaction. Each row records the key id it uses, so an interruption (crash,
    /// SIGKILL) leaves every record openable with exactly one key; calling again first finishes the
    /// interrupted rotation (`resumed`) instead of adding another key. Old keys stay in the store
    /// (wrapped), so old exports still import.
    @discardableResult
    public func rotateStoreKey(with sealer: any ItemSealer, afterBatch: ((Int) -> Void)? = nil) throws(RecordsError) -> KeyRotation {
        try unlock(with: sealer)
        var ring = try currentKeyring()
        var resumed = true
        if try storage.records(withKeyIdOtherThan: ring.current, limit: 1).isEmpty {
            resumed = false
            var newId = (ring.keys.keys.max() ?? 0) + 1
            while true {
                let key = SecretBytes.random(count: Envelope.keyByteCount)
                if try storage.addKey(try wrap(key, id: newId, sealer: sealer), makeCurrent: true) { break }
                newId += 1  // another process added this id meanwhile
            }
            try unlock(with: sealer)
            ring = try currentKeyring()
        }
        var target = ring.current
        var resealed = 0
        while true {
            target = (try currentKeyring()).current  // another process may have rotated again
            let batch = try storage.records(withKeyIdOtherThan: target, limit: configuration.rotationBatchSize)
            if batch.isEmpty { break }
            if batch.contains(where: { ring.keys[$0.keyId ?? 0] == nil }) {
                try unlock(with: sealer)  // a key another process added since
                ring = try currentKeyring()
            }
            var updated: [StoredRecord] = []
            updated.reserveCapacity(batch.count)
            for record in batch { updated.append(try reseal(record, to: target, ring: ring)) }
            try storage.replace(updated)
            resealed += updated.count
            afterBatch?(resealed)
        }
        return KeyRotation(keyId: target, resealed: resealed, resumed: resumed)
    }

    /// `record` re-sealed and re-indexed under store key `target` (sealed values of password records
    /// are untouched; they carry no store key).
    func reseal(_ record: StoredRecord, to target: UInt32, ring: Keyring) throws(RecordsError) -> StoredRecord {
        guard record.keying == .storeKey else {
            var copy = record
            copy.keyId = nil
            copy.blindIndexes = [:]
            return copy
        }
        let schema = try schema(of: record.collection)
        let opened = try openFields(record, password: nil)
        var fresh = try seal(id: record.id, collection: record.collection, schema: schema, fields: opened, sealing: .storeKey)
        fresh.clear = record.clear
        return fresh
    }
}
