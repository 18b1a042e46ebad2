import Foundation

/// SecureFoundation's own items (the vault's state and failure counter): generic-password items
/// whose service is `SecureFoundation` or starts with `SecureFoundation.` (any letter case). The
/// public API reads them only when asked for by service, leaves them out of listings and of broad
/// deletes and updates, and refuses to write or delete them (`internalItem`); SecureFoundation's
/// modules write them through package-internal methods.
extension Keychain {
    /// True when `service` names SecureFoundation's internal generic-password items.
    public static func isInternalService(_ service: String) -> Bool {
        let lowered = service.lowercased()
        return lowered == "securefoundation" || lowered.hasPrefix("securefoundation.")
    }

    static func isInternal(_ identity: KeychainItem.Identity) -> Bool {
        identity.itemClass == .genericPassword && isInternalService(identity.service)
    }

    /// Throws `internalItem` when a write or delete through the public API names an internal item.
    static func refuseInternal(_ identity: KeychainItem.Identity) throws(KeychainError) {
        if isInternal(identity) { throw .internalItem(service: identity.service, account: identity.account) }
    }

    /// Throws `internalItem` when `query` names an internal service.
    static func refuseInternal(_ query: KeychainQuery) throws(KeychainError) {
        if query.itemClass == .genericPassword, let service = query.service, isInternalService(service) {
            throw .internalItem(service: service, account: query.account)
        }
    }

    /// The matches of a query that did not name a service, without internal items.
    static func withoutInternal(_ identities: [KeychainItem.Identity], query: KeychainQuery) -> [KeychainItem.Identity] {
        query.service == nil ? identities.filter { !isInternal($0) } : identities
    }

    /// Stores an internal item's value in clear (SecureFoundation's modules only).
    package func setInternalItem(_ value: Data, service: String, account: String) throws(KeychainError) {
        try upsertClearUnchecked(Array(value), for: .init(service: service, account: account), changingProtection: false)
    }

    /// Deletes an internal item (SecureFoundation's modules only); `itemNotFound` when absent.
    package func deleteInternalItem(service: String, account: String) throws(KeychainError) {
        let identity = KeychainItem.Identity(service: service, account: account)
        try engine.mutate { (s: inout KeychainEngine.State) throws(KeychainError) in
            guard s.items[identity] != nil else { throw .itemNotFound(service: service, account: account) }
            s.record(identity, nil)
        }
    }
}
