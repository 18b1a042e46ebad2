import Foundation
import SecureCore
import SecureKeychain

/// What the vault knows of values it sealed that are kept outside its keychain, so that retiring an
/// application key does not silently make them unreadable (docs/FORMATS.md, "Vault holders").
extension Vault {
    /// Something outside this vault's keychain that holds values the vault sealed (a records store's
    /// wrapped store keys), as last seen: which application keys sealed them.
    public struct Holder: Codable, Sendable, Equatable {
        /// A stable identity (for a records store, `records:` and its store id in hex).
        public var id: String
        /// Where it was last seen, for people: a file path, or a URL without a password.
        public var location: String
        /// The application key ids its sealed values were sealed under when last seen, ascending.
        public var keyIds: [UInt32]

        /// A holder with these values (`keyIds` sorted, duplicates removed).
        public init(id: String, location: String, keyIds: some Sequence<UInt32>) {
            self.id = id
            self.location = location
            self.keyIds = Set(keyIds).sorted()
        }
    }

    /// The keychain service of holder items: SecureFoundation's internal items, written by the
    /// vault only (account: the vault's name, `/`, the holder's id; value: the holder as JSON).
    public static let holderService = "securefoundation.vault.holders"

    /// The application key id `sealed` (what `encrypt` or the vault as an `ItemSealer` produced) says
    /// it was sealed under, read from its `SFV1` header without opening it; nil for anything else.
    public static func applicationKeyId(ofSealed sealed: some DataProtocol) -> UInt32? {
        let header = Array(sealed.prefix(sealedHeaderCount))
        guard header.count == sealedHeaderCount, header.prefix(4).elementsEqual(sealedMagic) else { return nil }
        return header.dropFirst(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// Records `holder` as last seen (replacing what was known of the same id; nothing is written
    /// when that is unchanged); a holder with no key ids is forgotten. `retireKey` refuses a key a
    /// recorded holder still uses.
    public func noteHolder(_ holder: Holder) throws(VaultError) {
        let account = holderAccountPrefix + holder.id
        let identity = KeychainItem.Identity(.genericPassword, service: Self.holderService, account: account)
        let known = keychain.items(matching: KeychainQuery(identity)).first.flatMap { try? JSONDecoder().decode(Holder.self, from: $0.value) }
        guard known != holder, !(known == nil && holder.keyIds.isEmpty) else { return }
        do {
            if holder.keyIds.isEmpty {
                try keychain.deleteInternalItem(service: Self.holderService, account: account)
            } else {
                try keychain.setInternalItem(holder.canonicalJSON(), service: Self.holderService, account: account)
            }
            try keychain.synchronizeBlocking()
        } catch {
            throw .keychain(error)
        }
    }

    /// Every recorded holder, by id. Items that do not parse are skipped.
    public func holders() -> [Holder] {
        keychain.items(matching: KeychainQuery(.genericPassword, service: Self.holderService))
            .filter { $0.identity.account.hasPrefix(holderAccountPrefix) }
            .compactMap { try? JSONDecoder().decode(Holder.self, from: $0.value) }
            .sorted { $0.id < $1.id }
    }

    /// This vault's holder items' accounts start with its name (several vaults may share a keychain).
    private var holderAccountPrefix: String { name + "/" }

    /// The recorded holders whose values are sealed under `keyId`.
    public func holders(using keyId: UInt32) -> [Holder] {
        holders().filter { $0.keyIds.contains(keyId) }
    }
}
