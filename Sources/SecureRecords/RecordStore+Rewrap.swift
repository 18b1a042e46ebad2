import SecureCore

/// Store keys as stored, and re-wrapping them under a sealer's current key.
extension RecordStore {
    /// The store's wrapped keys as stored, by id, and the current key id (nil before the first
    /// unlock): what a status report shows. Nothing is unwrapped.
    public func wrappedKeys() throws(RecordsError) -> (currentKeyId: UInt32?, keys: [WrappedStoreKey]) {
        guard let metadata = try storage.loadMetadata() else { throw .notARecordStore("the store is not initialized") }
        return (metadata.currentKeyId, metadata.keys.sorted { $0.id < $1.id })
    }

    /// Re-wraps every store key with `sealer` (after the vault's `rotateKey`: under its new current
    /// key, so that the old one can be retired), in one transaction, and leaves the store unlocked
    /// with them. The keys themselves do not change, so no record is touched. Every key must open
    /// with `sealer` (`storeKeyUnavailable` otherwise, and nothing changes). Returns the keys as now
    /// stored, by id.
    @discardableResult
    public func rewrapKeys(with sealer: any ItemSealer) throws(RecordsError) -> [WrappedStoreKey] {
        let (_, stored) = try wrappedKeys()
        var rewrapped: [WrappedStoreKey] = []
        for wrapped in stored {
            let (key, authenticates) = try unwrap(wrapped, sealer: sealer)
            rewrapped.append(try wrap(key, id: wrapped.id, authenticates: authenticates, sealer: sealer))
        }
        try storage.rewrapKeys(rewrapped)
        try unlock(with: sealer)
        return rewrapped
    }
}
