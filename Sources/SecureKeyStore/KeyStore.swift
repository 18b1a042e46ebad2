import Foundation
import SecureCore
import SecureKeychain
import SecureKeys

/// Key pairs and partner keys kept in a SecureKeychain file by tag, after Heimdall.
///
/// Each key is a keychain item of class `.key` with service `KeyStore.service`: the public key at
/// account `tag` (clear SPKI DER) and, for a key pair, the private key at `tag + ".private"`
/// (PKCS#8 DER sealed through the caller's `ItemSealer` and bound to that item, never stored
/// clear). Both carry label = key type and comment = SHA-256 fingerprint (hex). A key stored with
/// a sealer also has a sealed kind record (service `KeyStore.kindService`, account `tag`): pair or
/// partner, and the public key's fingerprint, so that whoever can write the file can neither turn
/// a pair into a partner key by deleting its private half nor swap a partner key unseen. The items
/// of one key are added, replaced and deleted together. Failures are `KeyStoreError` cases.
public struct KeyStore: Sendable {
    /// The keychain service of every key item.
    public static let service = "securefoundation.keys"
    /// Appended to a tag to name its private key item (Heimdall's convention).
    public static let privateSuffix = ".private"
    /// The keychain service of the sealed kind records (account: the tag). See docs/FORMATS.md.
    public static let kindService = "securefoundation.keys.kind"

    /// What a tag holds, as its sealed kind record says (docs/FORMATS.md, "Key kind records").
    enum Kind: UInt8 {
        case pair = 1
        case partner = 2
    }

    /// One stored key, as `list()` reports it.
    public struct Entry: Sendable, Equatable {
        /// The tag naming the key.
        public let tag: String
        /// The key's type.
        public let type: KeyType
        /// SHA-256 of its SPKI.
        public let fingerprint: KeyFingerprint
        /// True for a key pair, false for a public-only partner key.
        public let hasPrivateKey: Bool

        /// An entry with these values.
        public init(tag: String, type: KeyType, fingerprint: KeyFingerprint, hasPrivateKey: Bool) {
            self.tag = tag
            self.type = type
            self.fingerprint = fingerprint
            self.hasPrivateKey = hasPrivateKey
        }
    }

    /// The keychain holding the keys.
    public let keychain: Keychain
    /// The access group of the key items (the default group unless given).
    public let accessGroup: String

    /// A store over `keychain`, using items in `accessGroup`.
    public init(keychain: Keychain, accessGroup: String = "") {
        self.keychain = keychain
        self.accessGroup = accessGroup
    }

    /// Generates a key pair of `type` under `tag` (private key sealed through `sealer`) and returns
    /// its public key. `duplicateTag` when the tag is taken; nothing is stored on failure.
    @discardableResult
    public func generate(_ type: KeyType, tag: String, sealer: any ItemSealer) throws(KeyStoreError) -> AsymmetricPublicKey {
        let key = try generating(type)
        try storeKeyPair(key, tag: tag, sealer: sealer)
        return key.publicKey
    }

    /// Stores an existing private key (and its public key) under `tag`. `duplicateTag` when taken.
    public func storeKeyPair(_ privateKey: AsymmetricPrivateKey, tag: String, sealer: any ItemSealer) throws(KeyStoreError) {
        var items = try pairItems(privateKey, tag: tag, sealer: sealer)
        defer { Self.wipe(&items) }
        try mapping(tag) { () throws(KeychainError) in try keychain.add(items) }
    }

    /// Stores a partner's public key under `tag`, with no private part. `duplicateTag` when taken.
    ///
    /// With a `sealer`, a sealed kind record authenticates it, so `verifiedPublicKey` accepts it;
    /// without one it is stored as given and only the unauthenticated `publicKey` returns it. Storing
    /// the same key again with a sealer authenticates a partner key stored earlier without one.
    public func storePartnerKey(_ publicKey: AsymmetricPublicKey, tag: String, sealer: (any ItemSealer)? = nil) throws(KeyStoreError) {
        var items = [try publicItem(publicKey, tag: tag)]
        if let sealer { items.append(try kindItem(.partner, publicKey, tag: tag, sealer: sealer)) }
        do {
            try mapping(tag) { () throws(KeychainError) in try keychain.add(items) }
        } catch .duplicateTag where sealer != nil {
            // Authenticate the same partner key stored without a sealer; anything else stays taken.
            let stored = try? mapping(tag) { () throws(KeychainError) in try keychain.item(identity(tag)) }
            guard stored?.value == publicKey.spkiDERRepresentation, !has(identity(tag + Self.privateSuffix)),
                !has(kindIdentity(tag))
            else { throw .duplicateTag(tag) }
            try mapping(tag) { () throws(KeychainError) in try keychain.add([items[1]]) }
        }
    }

    /// The public key under `tag` (of a key pair or a partner). `keyNotFound` when absent. The
    /// public item is stored in clear and is not authenticated here; `verifiedPublicKey` and
    /// `privateKey` check a pair's public half against its sealed private half.
    public func publicKey(tag: String) throws(KeyStoreError) -> AsymmetricPublicKey {
        let item = try mapping(tag) { () throws(KeychainError) in try keychain.item(identity(tag)) }
        return try Self.storedPublicKey(item.value, tag: tag)
    }

    /// The private key under `tag`, opened through `sealer`: `keyNotFound` when the tag is absent,
    /// `noPrivateKey` for a partner key, `privateKeyMissing` for a pair whose private item is gone
    /// (its kind record says pair), `sealerLocked` when the sealer is locked,
    /// `sealedKeyDoesNotOpen` when it is another sealer or the sealed value was modified, and
    /// `publicKeyMismatch` when the stored public key is not the private key's public half.
    public func privateKey(tag: String, sealer: any ItemSealer) throws(KeyStoreError) -> AsymmetricPrivateKey {
        try requireTag(tag)
        guard has(identity(tag + Self.privateSuffix)) else {
            _ = try publicKey(tag: tag)  // keyNotFound
            if try kindRecord(tag: tag, sealer: sealer)?.kind == .pair { throw .privateKeyMissing(tag: tag) }
            throw .noPrivateKey(tag: tag)
        }
        var der = try mapping(tag) { () throws(KeychainError) in
            try keychain.openSealedValue(identity(tag + Self.privateSuffix), sealer: sealer)
        }
        defer { der.resetBytes(in: 0..<der.count) }
        let key: AsymmetricPrivateKey
        do {
            key = try AsymmetricPrivateKey(pkcs8DERRepresentation: der)
        } catch {
            throw .storedKeyMalformed(tag: tag, error)
        }
        // The public item is clear: bind it to the authenticated private key.
        let stored = try mapping(tag) { () throws(KeychainError) in try keychain.item(identity(tag)) }
        guard stored.value == key.publicKey.spkiDERRepresentation else { throw KeyStoreError.publicKeyMismatch(tag: tag) }
        return key
    }

    /// The public key under `tag`, authenticated through `sealer`:
    /// - a key pair's sealed private key is opened and the stored public key must be its public
    ///   half (`publicKeyMismatch` otherwise); a pair whose private item is gone is
    ///   `privateKeyMissing`, never used as a partner key;
    /// - a partner key must have a sealed kind record naming its fingerprint (`publicKeyMismatch`
    ///   when it names another key); one stored without a sealer, or whose record was removed, is
    ///   `unauthenticatedKey`.
    ///
    /// `sealedKeyDoesNotOpen` when a sealed item fails to open (modified, or another sealer).
    public func verifiedPublicKey(tag: String, sealer: any ItemSealer) throws(KeyStoreError) -> AsymmetricPublicKey {
        try requireTag(tag)
        let stored = try publicKey(tag: tag)
        let record = try kindRecord(tag: tag, sealer: sealer)
        if let record, record.fingerprint != stored.fingerprint.bytes { throw .publicKeyMismatch(tag: tag) }
        if has(identity(tag + Self.privateSuffix)) { return try privateKey(tag: tag, sealer: sealer).publicKey }
        switch record?.kind {
        case .partner: return stored
        case .pair: throw .privateKeyMissing(tag: tag)
        case nil: throw .unauthenticatedKey(tag: tag)
        }
    }

    /// Replaces the key pair under `tag` by a fresh one of `type` (by default the same type) in
    /// one change, and returns the new public key. `keyNotFound` when absent, `noPrivateKey` for a
    /// partner key; the old pair stays when anything fails.
    @discardableResult
    public func regenerate(tag: String, type: KeyType? = nil, sealer: any ItemSealer) throws(KeyStoreError) -> AsymmetricPublicKey {
        try requireTag(tag)
        guard let current = try list().first(where: { $0.tag == tag }) else { throw KeyStoreError.keyNotFound(tag: tag) }
        guard current.hasPrivateKey else { throw KeyStoreError.noPrivateKey(tag: tag) }
        let key = try generating(type ?? current.type)
        var items = try pairItems(key, tag: tag, sealer: sealer)
        defer { Self.wipe(&items) }
        try mapping(tag) { () throws(KeychainError) in try keychain.replace(items) }
        return key.publicKey
    }

    /// Deletes the key under `tag`: every item of a pair, or the partner key, with its kind record.
    /// `keyNotFound` when absent.
    public func delete(tag: String) throws(KeyStoreError) {
        try requireTag(tag)
        try mapping(tag) { () throws(KeychainError) in
            _ = try keychain.delete([identity(tag), identity(tag + Self.privateSuffix), kindIdentity(tag)])
        }
    }

    /// Every stored key, ordered by tag. `storedKeyMalformed` when a stored public key does not parse.
    public func list() throws(KeyStoreError) -> [Entry] {
        let items = keychain.items(matching: KeychainQuery(.key, accessGroup: accessGroup, service: Self.service))
        let accounts = Set(items.map(\.identity.account))
        var entries = [Entry]()
        for item in items where !item.identity.account.hasSuffix(Self.privateSuffix) {
            let key = try Self.storedPublicKey(item.value, tag: item.identity.account)
            entries.append(Entry(
                tag: item.identity.account, type: key.type, fingerprint: key.fingerprint,
                hasPrivateKey: accounts.contains(item.identity.account + Self.privateSuffix)))
        }
        return entries
    }

    // MARK: Items

    private func identity(_ account: String) -> KeychainItem.Identity {
        KeychainItem.Identity(.key, accessGroup: accessGroup, service: Self.service, account: account)
    }

    private func kindIdentity(_ tag: String) -> KeychainItem.Identity {
        KeychainItem.Identity(.key, accessGroup: accessGroup, service: Self.kindService, account: tag)
    }

    private func has(_ identity: KeychainItem.Identity) -> Bool {
        !keychain.items(matching: KeychainQuery(identity)).isEmpty
    }

    /// The sealed kind record: the kind byte, then the SHA-256 fingerprint of the public key's SPKI.
    private func kindItem(_ kind: Kind, _ key: AsymmetricPublicKey, tag: String, sealer: any ItemSealer) throws(KeyStoreError) -> Keychain.NewItem {
        try requireTag(tag)
        return Keychain.NewItem(
            identity: kindIdentity(tag), value: Data([kind.rawValue]) + key.fingerprint.bytes,
            attributes: Self.attributes(key), sealer: sealer)
    }

    /// The kind record under `tag` opened through `sealer`; nil when there is none.
    /// `sealedKeyDoesNotOpen` when it does not open or does not hold a record.
    private func kindRecord(tag: String, sealer: any ItemSealer) throws(KeyStoreError) -> (kind: Kind, fingerprint: Data)? {
        guard has(kindIdentity(tag)) else { return nil }
        let value = try mapping(tag) { () throws(KeychainError) in try keychain.openSealedValue(kindIdentity(tag), sealer: sealer) }
        guard value.count == 33, let kind = Kind(rawValue: value[value.startIndex]) else {
            throw .sealedKeyDoesNotOpen(tag: tag)
        }
        return (kind, Data(value.dropFirst()))
    }

    private func publicItem(_ key: AsymmetricPublicKey, tag: String) throws(KeyStoreError) -> Keychain.NewItem {
        try requireTag(tag)
        return Keychain.NewItem(identity: identity(tag), value: key.spkiDERRepresentation, attributes: Self.attributes(key))
    }

    private func pairItems(_ key: AsymmetricPrivateKey, tag: String, sealer: any ItemSealer) throws(KeyStoreError) -> [Keychain.NewItem] {
        let pkcs8 = key.pkcs8DERRepresentation.withUnsafeBytes { Data($0) }
        return [
            try publicItem(key.publicKey, tag: tag),
            Keychain.NewItem(
                identity: identity(tag + Self.privateSuffix), value: pkcs8, attributes: Self.attributes(key.publicKey),
                sealer: sealer),
            try kindItem(.pair, key.publicKey, tag: tag, sealer: sealer),
        ]
    }

    /// Zeroes the values (the clear PKCS#8 before sealing) once the items are stored or refused.
    private static func wipe(_ items: inout [Keychain.NewItem]) {
        for index in items.indices { items[index].value.resetBytes(in: 0..<items[index].value.count) }
    }

    private static func attributes(_ key: AsymmetricPublicKey) -> KeychainItem.Attributes {
        KeychainItem.Attributes(label: key.type.rawValue, comment: key.fingerprint.hex)
    }

    /// A tag is non-empty and does not end in `.private`, so no tag names another tag's private item.
    private func requireTag(_ tag: String) throws(KeyStoreError) {
        guard !tag.isEmpty, !tag.hasSuffix(Self.privateSuffix) else { throw KeyStoreError.invalidTag(tag) }
    }

    /// A fresh private key of `type`; SecureKeys' refusal is `key(_:)`.
    private func generating(_ type: KeyType) throws(KeyStoreError) -> AsymmetricPrivateKey {
        do {
            return try AsymmetricPrivateKey.generate(type)
        } catch {
            throw .key(error)
        }
    }

    /// The public key stored under `tag` as `spki`; `storedKeyMalformed` when it does not parse.
    private static func storedPublicKey(_ spki: Data, tag: String) throws(KeyStoreError) -> AsymmetricPublicKey {
        do {
            return try AsymmetricPublicKey(spkiDERRepresentation: spki)
        } catch {
            throw .storedKeyMalformed(tag: tag, error)
        }
    }

    /// Runs a keychain operation for `tag`, turning its errors into `KeyStoreError` cases.
    private func mapping<R>(_ tag: String, _ body: () throws(KeychainError) -> R) throws(KeyStoreError) -> R {
        do {
            return try body()
        } catch .duplicateItem {
            throw .duplicateTag(tag)
        } catch .itemNotFound {
            throw .keyNotFound(tag: tag)
        } catch .protectionMismatch {
            throw .noPrivateKey(tag: tag)
        } catch .locked {
            throw .sealerLocked
        } catch .authenticationFailed {
            throw .sealedKeyDoesNotOpen(tag: tag)
        } catch {
            throw .keychain(error)
        }
    }
}
