import Foundation

/// The iMAS keychain's convenience surface: passwords by service and account (generic-password
/// items in one access group, the default group unless given).
extension Keychain {
    /// Stores `password` in clear for `service` and `account`, adding the item or replacing its
    /// value. A sealed item is never downgraded to clear silently: it throws `protectionMismatch`
    /// (nothing changed) unless `changingProtection` is true, the caller's explicit request to
    /// store the new value in clear. Use `setSecurePassword` to replace a sealed value.
    public func setPassword(
        _ password: Data, service: String, account: String, accessGroup: String = "", changingProtection: Bool = false
    ) throws(KeychainError) {
        try upsertClear(
            Array(password), for: .init(accessGroup: accessGroup, service: service, account: account),
            changingProtection: changingProtection)
    }

    /// Stores `password` as UTF-8 (same rules as the `Data` form).
    public func setPassword(
        _ password: String, service: String, account: String, accessGroup: String = "", changingProtection: Bool = false
    ) throws(KeychainError) {
        try upsertClear(
            Array(password.utf8), for: .init(accessGroup: accessGroup, service: service, account: account),
            changingProtection: changingProtection)
    }

    /// Adds or replaces a clear value, refusing to replace a sealed one unless `changingProtection`.
    func upsertClear(_ bytes: [UInt8], for identity: KeychainItem.Identity, changingProtection: Bool) throws(KeychainError) {
        try Self.refuseInternal(identity)
        try upsertClearUnchecked(bytes, for: identity, changingProtection: changingProtection)
    }

    func upsertClearUnchecked(_ bytes: [UInt8], for identity: KeychainItem.Identity, changingProtection: Bool) throws(KeychainError) {
        let now = Date().timeIntervalSince1970
        try engine.mutate { (s: inout KeychainEngine.State) throws(KeychainError) in
            if !changingProtection, s.items[identity]?.isSealed == true {
                throw .protectionMismatch(service: identity.service, account: identity.account, isSealed: true)
            }
            s.record(identity) { existing in
                StoredItem(
                    attributes: existing?.attributes ?? .init(), created: existing?.created ?? now,
                    modified: now, isSealed: false, value: bytes)
            }
        }
    }

    /// The password bytes for `service` and `account`: `itemNotFound` when absent,
    /// `protectionMismatch` when the item is sealed (use `securePasswordData`).
    public func passwordData(service: String, account: String, accessGroup: String = "") throws(KeychainError) -> Data {
        let stored = try storedItem(.init(accessGroup: accessGroup, service: service, account: account))
        guard !stored.isSealed else { throw .protectionMismatch(service: service, account: account, isSealed: true) }
        return Data(stored.value)
    }

    /// The password as a string; `valueNotText` when it is not UTF-8.
    public func password(service: String, account: String, accessGroup: String = "") throws(KeychainError) -> String {
        let data = try passwordData(service: service, account: account, accessGroup: accessGroup)
        guard let text = String(data: data, encoding: .utf8) else { throw .valueNotText(service: service, account: account) }
        return text
    }

    /// The accounts holding a password for `service`, sorted.
    public func accounts(service: String, accessGroup: String = "") -> [String] {
        items(matching: KeychainQuery(accessGroup: accessGroup, service: service)).map(\.identity.account)
    }

    /// Every service with its accounts, sorted.
    public func accountsByService(accessGroup: String = "") -> [String: [String]] {
        Dictionary(grouping: items(matching: KeychainQuery(accessGroup: accessGroup)), by: \.identity.service)
            .mapValues { $0.map(\.identity.account) }
    }

    /// Deletes the password of exactly one account of `service` (never the service's other accounts);
    /// `itemNotFound` when absent.
    public func deletePassword(service: String, account: String, accessGroup: String = "") throws(KeychainError) {
        try delete(KeychainQuery(accessGroup: accessGroup, service: service, account: account))
    }

    func storedItem(_ identity: KeychainItem.Identity) throws(KeychainError) -> StoredItem {
        guard let stored = engine.read({ $0.items[identity] }) else {
            throw .itemNotFound(service: identity.service, account: identity.account)
        }
        return stored
    }
}
