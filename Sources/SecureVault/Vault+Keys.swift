import Foundation
import SecureCore

/// Wrapping the vault key and sealing the application keys (native envelopes; docs/FORMATS.md).
extension Vault {
    static func wrap(_ vaultKey: SecretBytes, passphrase: SecretBytes, kdf: PasswordKDF, context: Data) throws(VaultError) -> Data {
        do {
            return try vaultKey.withUnsafeBytes { key throws(SecureCoreError) in
                try passphrase.withUnsafeBytes { secret throws(SecureCoreError) in
                    try Envelope.seal(key, passphrase: secret, kdf: kdf, context: context)
                }
            }
        } catch {
            throw .crypto(error)
        }
    }

    static func unwrap(_ wrap: Data, passphrase: SecretBytes, context: [UInt8], limits: KDFLimits) throws(VaultError) -> SecretBytes {
        do throws(SecureCoreError) {
            var key = try passphrase.withUnsafeBytes { secret throws(SecureCoreError) in
                try Envelope.open(wrap, passphrase: secret, context: context, limits: limits)
            }
            defer { key.resetBytes(in: 0..<key.count) }
            guard key.count == Envelope.keyByteCount else { throw SecureCoreError.authenticationFailed }
            return SecretBytes(key)
        } catch {
            throw .crypto(error)
        }
    }

    static func seal(_ applicationKey: SecretBytes, vaultKey: SecretBytes, vaultId: Data, keyId: UInt32) throws(VaultError) -> Data {
        do {
            return try applicationKey.withUnsafeBytes { key throws(SecureCoreError) in
                try Envelope.seal(key, key: vaultKey, context: VaultState.keyContext(vaultId: vaultId, keyId: keyId))
            }
        } catch {
            throw .crypto(error)
        }
    }

    /// Opens every application key of `state`; a key that fails means the state was modified.
    static func openKeys(_ state: VaultState, vaultKey: SecretBytes) throws(VaultError) -> Keys {
        var keys: [UInt32: SecretBytes] = [:]
        for wrapped in state.keys {
            do {
                var key = try Envelope.open(
                    wrapped.sealed, key: vaultKey, context: VaultState.keyContext(vaultId: state.vaultId, keyId: wrapped.id))
                defer { key.resetBytes(in: 0..<key.count) }
                guard key.count == Envelope.keyByteCount else { throw SecureCoreError.authenticationFailed }
                keys[wrapped.id] = SecretBytes(key)
            } catch {
                throw .corruptState("application key \(wrapped.id) failed to open: \(error)")
            }
        }
        return Keys(vaultId: state.vaultId, vaultKey: vaultKey, applicationKeys: keys, currentKeyId: state.currentKeyId)
    }
}
