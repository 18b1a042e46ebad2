import Foundation
import SecureCore
import SecureKeychain

extension Vault {
    /// What `rotateKey()` did.
    public struct Rotation: Sendable, Equatable {
        /// The new current application key id.
        public let keyId: UInt32
        /// Secure keychain items re-sealed under the new key.
        public let resealed: Int
        /// Sealed items this vault could not open (sealed by another sealer); left unchanged.
        public let skipped: Int
    }

    /// Makes a new application key current (older keys stay, so existing data still opens), stores
    /// it durably, then re-seals every sealed keychain item of every class (secure passwords and
    /// stored private keys) under it. Each item is replaced in one write, so an interruption leaves
    /// every item readable. Items sealed by another sealer are counted in `skipped` and left alone.
    @discardableResult
    public func rotateKey() throws(VaultError) -> Rotation {
        var newId: UInt32 = 0
        try change { state, keys throws(VaultError) in
            let highest = state.keys.map(\.id).max() ?? 0
            // Ids only grow, so a retired id is never reused for a different key; the last id is
            // reached only by a state someone else wrote (four billion rotations are not made).
            guard highest < UInt32.max else { throw .corruptState("application key id \(highest) is the last one; no new key id is left") }
            newId = highest + 1
            let key = SecretBytes.random(count: Envelope.keyByteCount)
            state.keys.append(.init(id: newId, sealed: try Self.seal(key, vaultKey: keys.vaultKey, vaultId: state.vaultId, keyId: newId)))
            state.currentKeyId = newId
            keys.applicationKeys[newId] = key
            keys.currentKeyId = newId
        }
        var resealed = 0, skipped = 0
        do {
            for item in sealedItems() {
                var value: Data
                do {
                    value = try keychain.openSealedValue(item.identity, sealer: self)
                } catch .authenticationFailed {
                    skipped += 1
                    continue
                }
                defer { value.resetBytes(in: 0..<value.count) }
                try keychain.replace([Keychain.NewItem(identity: item.identity, value: value, attributes: item.attributes, sealer: self)])
                resealed += 1
            }
            try keychain.synchronizeBlocking()
        } catch {
            throw .keychain(error)
        }
        return Rotation(keyId: newId, resealed: resealed, skipped: skipped)
    }

    /// The ids of application keys that sealed items in this vault's keychain are sealed under
    /// (from their `SFV1` headers). Data sealed by `encrypt` and kept elsewhere is not seen.
    public func keyIdsInUse() -> Set<UInt32> {
        Set(sealedItems().compactMap { Self.applicationKeyId(ofSealed: $0.value) })
    }

    /// Removes application key `keyId` from the vault for good (unlocked only). Refused with
    /// `keyInUse` for the current key, while a sealed keychain item is still sealed under it (rotate
    /// first), and, unless `force`, while a recorded holder (see `noteHolder`, for example a records
    /// store whose keys it wraps) last used it: re-wrap the holder under the current key first. Data
    /// sealed under it and kept elsewhere, unrecorded, can no longer be opened afterwards.
    public func retireKey(_ keyId: UInt32, force: Bool = false) throws(VaultError) {
        let inUse = keyIdsInUse()
        let held = force ? [] : holders(using: keyId)
        try change { state, keys throws(VaultError) in
            guard state.keys.contains(where: { $0.id == keyId }) else { throw .unknownKeyId(keyId) }
            guard keyId != state.currentKeyId else { throw .keyInUse(keyId, reason: "it is the current key") }
            guard !inUse.contains(keyId) else { throw .keyInUse(keyId, reason: "sealed keychain items use it; run rotate first") }
            guard held.isEmpty else {
                throw .keyInUse(
                    keyId,
                    reason: "\(held.map(\.location).joined(separator: ", ")) still \(held.count == 1 ? "uses" : "use") it, as last seen; "
                        + "re-wrap \(held.count == 1 ? "it" : "them") under the current key first (sf records rewrap --vault)")
            }
            state.keys.removeAll { $0.id == keyId }
            keys.applicationKeys[keyId] = nil
        }
    }

    /// Every sealed item of the keychain, of every class.
    private func sealedItems() -> [KeychainItem] {
        KeychainItem.Class.allCases.flatMap { keychain.items(matching: KeychainQuery($0)) }.filter(\.isSealed)
    }
}
