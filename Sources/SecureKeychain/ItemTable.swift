/// The in-memory items, grouped by (class, access group, service) and then keyed by account.
///
/// Two levels instead of one table keyed by the whole identity: each lookup hashes short keys in a
/// small, cache-friendly table; a service's accounts are listed without scanning other services;
/// and the table takes about half the memory (a keychain holds every item in memory).
struct ItemTable: Sendable {
    private struct Group: Hashable, Sendable {
        let itemClass: KeychainItem.Class
        let accessGroup: String
        let service: String

        init(_ identity: KeychainItem.Identity) {
            itemClass = identity.itemClass
            accessGroup = identity.accessGroup
            service = identity.service
        }
    }

    private var groups: [Group: [String: StoredItem]] = [:]

    subscript(identity: KeychainItem.Identity) -> StoredItem? {
        get { groups[Group(identity)]?[identity.account] }
        set {
            let group = Group(identity)
            if let newValue {
                groups[group, default: [:]][identity.account] = newValue
            } else if groups[group]?.removeValue(forKey: identity.account) != nil, groups[group]?.isEmpty == true {
                groups[group] = nil
            }
        }
    }

    /// Stores `item` under `identity`; the item it replaced, if any.
    @discardableResult
    mutating func updateValue(_ item: StoredItem, for identity: KeychainItem.Identity) -> StoredItem? {
        groups[Group(identity), default: [:]].updateValue(item, forKey: identity.account)
    }

    /// The identities matching `query`, in primary-key order, at most `query.limit`.
    func identities(matching query: KeychainQuery) -> [KeychainItem.Identity] {
        var found: [KeychainItem.Identity] = []
        for (group, accounts) in groups
        where group.itemClass == query.itemClass && (query.accessGroup ?? group.accessGroup) == group.accessGroup
            && (query.service ?? group.service) == group.service
        {
            if let account = query.account {
                if accounts[account] != nil {
                    found.append(.init(group.itemClass, accessGroup: group.accessGroup, service: group.service, account: account))
                }
            } else {
                for account in accounts.keys {
                    found.append(.init(group.itemClass, accessGroup: group.accessGroup, service: group.service, account: account))
                }
            }
        }
        found.sort { $0.precedes($1) }
        return query.limit.map { Array(found.prefix(max(0, $0))) } ?? found
    }
}
