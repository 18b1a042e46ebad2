import Foundation
@_spi(Testing) import SecureCore

#if DEBUG
extension Vault {
    /// The identities of the vault and application key buffers while unlocked, for tests that
    /// check `purge()` zeroes them (see `SecretBytesZeroization`).
    @_spi(Testing)
    public var keyStorageIdentifiers: [ObjectIdentifier] {
        guard let keys = try? currentKeys() else { return [] }
        return [keys.vaultKey.storageIdentifier] + keys.applicationKeys.values.map(\.storageIdentifier)
    }
}
#endif
