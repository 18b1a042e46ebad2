import Foundation
import SecureCore

/// Changes to several items made as one: every item is checked and recorded under one lock and
/// reaches the file in one write batch, so readers and the file see all of them or none. Values to
/// seal are sealed (bound to their own identity, as secure passwords are) before anything changes.
extension Keychain {
    /// One item to store with `add(_:)` or `replace(_:deleting:)`: its value is kept clear when
    /// `sealer` is nil, else sealed through it and bound to `identity`.
    public struct NewItem: Sendable {
        /// Where the item goes.
        public var identity: KeychainItem.Identity
        /// The value to store (before sealing).
        public var value: Data
        /// Its descriptive attributes.
        public var attributes: KeychainItem.Attributes
        /// Seals the value when given.
        public var sealer: (any ItemSealer)?

        /// An item with `value` at `identity`, sealed through `sealer` when given.
        public init(
            identity: KeychainItem.Identity, value: Data, attributes: KeychainItem.Attributes = .init(),
            sealer: (any ItemSealer)? = nil
        ) {
            self.identity = identity
            self.value = value
            self.attributes = attributes
            self.sealer = sealer
        }
    }

    /// Adds all `items` or none: `duplicateItem` when any identity exists, `locked` or
    /// `sealingFailed` when a sealer fails (then nothing changed).
    public func add(_ items: [NewItem]) throws(KeychainError) {
        let prepared = try Self.prepare(items)
        let now = Date().timeIntervalSince1970
        try engine.mutate { (s: inout KeychainEngine.State) throws(KeychainError) in
            for (identity, _) in prepared where s.items[identity] != nil {
                throw .duplicateItem(service: identity.service, account: identity.account)
            }
            for (identity, item) in prepared { s.record(identity, item.dated(created: now, modified: now)) }
        }
    }

    /// Adds or replaces all `items` and deletes the items at `deleting` (absent ones are ignored),
    /// as one change. Replaced items keep their creation date.
    public func replace(_ items: [NewItem], deleting: [KeychainItem.Identity] = []) throws(KeychainError) {
        let prepared = try Self.prepare(items)
        let now = Date().timeIntervalSince1970
        for identity in deleting { try Self.refuseInternal(identity) }
        try engine.mutate { (s: inout KeychainEngine.State) throws(KeychainError) in
            for identity in deleting where s.items[identity] != nil { s.record(identity, nil) }
            for (identity, item) in prepared {
                s.record(identity) { existing in item.dated(created: existing?.created ?? now, modified: now) }
            }
        }
    }

    /// Deletes the items at `identities` that exist, as one change, and returns how many; throws
    /// `itemNotFound` (naming the first identity) when none exists.
    @discardableResult
    public func delete(_ identities: [KeychainItem.Identity]) throws(KeychainError) -> Int {
        for identity in identities { try Self.refuseInternal(identity) }
        return try engine.mutate { (s: inout KeychainEngine.State) throws(KeychainError) in
            let present = identities.filter { s.items[$0] != nil }
            guard !present.isEmpty else {
                throw .itemNotFound(service: identities.first?.service, account: identities.first?.account)
            }
            for identity in present { s.record(identity, nil) }
            return present.count
        }
    }

    /// Opens the sealed value of the item at `identity`: `itemNotFound`, `protectionMismatch` for a
    /// clear item, `locked` when the sealer is locked, `sealingFailed` when the sealer itself
    /// failed (its own error, an I/O error, no memory: nothing is said about the value),
    /// `authenticationFailed` when the value was modified, copied from another item, or sealed
    /// under another key.
    public func openSealedValue(_ identity: KeychainItem.Identity, sealer: any ItemSealer) throws(KeychainError) -> Data {
        let stored = try storedItem(identity)
        guard stored.isSealed else {
            throw .protectionMismatch(service: identity.service, account: identity.account, isSealed: false)
        }
        do {
            return try sealer.open(Data(stored.value), context: SealedValueBinding.context(for: identity))
        } catch .locked {
            throw .locked
        } catch {
            switch error {
            case .sealerFailed, .io, .outOfMemory: throw .sealingFailed(error)
            default: throw .authenticationFailed(service: identity.service, account: identity.account)
            }
        }
    }

    private static func prepare(_ items: [NewItem]) throws(KeychainError) -> [(KeychainItem.Identity, StoredItem)] {
        var prepared: [(KeychainItem.Identity, StoredItem)] = []
        for item in items {
            try refuseInternal(item.identity)
            var value = item.value
            if let sealer = item.sealer { value = try seal(item.value, identity: item.identity, sealer: sealer) }
            prepared.append(
                (item.identity, StoredItem(
                    attributes: item.attributes, created: 0, modified: 0, isSealed: item.sealer != nil, value: Array(value))))
        }
        return prepared
    }
}

extension StoredItem {
    fileprivate func dated(created: Double, modified: Double) -> StoredItem {
        var item = self
        item.created = created
        item.modified = modified
        return item
    }
}
