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
    /// it durably, then re-seals every secure generic-password item of the keychain under it.
    /// Each item is replaced in one write, so an interruption leaves every item readable.
    @discardableResult
    public func rotateKey() throws(VaultError) -> Rotation {
        var newId: UInt32 = 0
        try change { state, keys throws(VaultError) in
            newId = (state.keys.map(\.id).max() ?? 0) + 1
            let key = SecretBytes.random(count: Envelope.keyByteCount)
            state.keys.append(.init(id: newId, sealed: try Self.seal(key, vaultKey: keys.vaultKey, vaultId: state.vaultId, keyId: newId)))
            state.currentKeyId = newId
            keys.applicationKeys[newId] = key
            keys.currentKeyId = newId
        }
        var resealed = 0, skipped = 0
        do {
            for item in keychain.items(matching: KeychainQuery(.genericPassword)) where item.isSealed {
                let id = item.identity
                let value: Data
                do {
                    value = try keychain.securePasswordData(service: id.service, account: id.account, accessGroup: id.accessGroup, sealer: self)
                } catch .authenticationFailed {
                    skipped += 1
                    continue
                }
                try keychain.setSecurePassword(value, service: id.service, account: id.account, accessGroup: id.accessGroup, sealer: self)
                resealed += 1
            }
            try keychain.synchronizeBlocking()
        } catch {
            throw .keychain(error)
        }
        return Rotation(keyId: newId, resealed: resealed, skipped: skipped)
    }
}
