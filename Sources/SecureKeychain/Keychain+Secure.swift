import Foundation
import SecureCore

/// "Secure" items: the value is sealed through an `ItemSealer` (the vault's application key) and
/// bound to the item's identity, so a sealed value copied onto another item fails to open.
/// Service and account names stay clear.
extension Keychain {
    /// Seals `password` and stores it for `service` and `account` (adding or replacing).
    /// Throws `locked` when the sealer is locked.
    public func setSecurePassword(
        _ password: Data, service: String, account: String, accessGroup: String = "", sealer: any ItemSealer
    ) throws(KeychainError) {
        let identity = KeychainItem.Identity(accessGroup: accessGroup, service: service, account: account)
        try Self.refuseInternal(identity)
        let sealed = try Self.seal(password, identity: identity, sealer: sealer)
        try upsert(sealed, for: identity, attributes: nil, isSealed: true)
    }

    /// Seals the UTF-8 bytes of `password`.
    public func setSecurePassword(
        _ password: String, service: String, account: String, accessGroup: String = "", sealer: any ItemSealer
    ) throws(KeychainError) {
        try setSecurePassword(Data(password.utf8), service: service, account: account, accessGroup: accessGroup, sealer: sealer)
    }

    /// Opens a secure password: `itemNotFound`, `locked` (never nil), `authenticationFailed` when
    /// the sealed value was modified or belongs to another item, `protectionMismatch` for a clear item.
    public func securePasswordData(
        service: String, account: String, accessGroup: String = "", sealer: any ItemSealer
    ) throws(KeychainError) -> Data {
        try openSealedValue(KeychainItem.Identity(accessGroup: accessGroup, service: service, account: account), sealer: sealer)
    }

    /// A secure password as a string; `valueNotText` when it is not UTF-8.
    public func securePassword(
        service: String, account: String, accessGroup: String = "", sealer: any ItemSealer
    ) throws(KeychainError) -> String {
        let data = try securePasswordData(service: service, account: account, accessGroup: accessGroup, sealer: sealer)
        guard let text = String(data: data, encoding: .utf8) else { throw .valueNotText(service: service, account: account) }
        return text
    }

    static func seal(_ value: Data, identity: KeychainItem.Identity, sealer: any ItemSealer) throws(KeychainError) -> Data {
        do {
            return try sealer.seal(value, context: SealedValueBinding.context(for: identity))
        } catch .locked {
            throw .locked
        } catch {
            throw .sealingFailed(error)
        }
    }
}

/// The associated data binding a sealed value to its item (docs/FORMATS.md):
/// `"SFKC" || 0x01 || class || u32be(len) || accessGroup || u32be(len) || service || u32be(len) || account`,
/// strings in UTF-8. Length prefixes make the encoding injective, so no two identities share a context.
public enum SealedValueBinding {
    /// The binding format version byte.
    public static let version: UInt8 = 1

    /// The context bytes passed to the sealer for an item with `identity`.
    public static func context(for identity: KeychainItem.Identity) -> Data {
        var context = Data("SFKC".utf8)
        context.append(version)
        context.append(identity.itemClass.rawValue)
        for field in [identity.accessGroup, identity.service, identity.account] {
            let bytes = Data(field.utf8)
            withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { context.append(contentsOf: $0) }
            context.append(bytes)
        }
        return context
    }
}
