import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureCore
import SecureKeychain
import SecureVault
import Testing

/// Issue 18 item 4: vault rotation then `retire-key` silently made vault-keyed stores unreadable.
/// Store keys are re-wrapped under the vault's current key, and the vault refuses to retire a key a
/// store it has seen still uses.
@Suite struct RewrapTests {
    /// The vault's record of `store`, as `sf` notes it after every `--vault` use.
    static func note(_ store: RecordStore, in vault: Vault) throws {
        let keyIds = try store.wrappedKeys().keys.compactMap { Vault.applicationKeyId(ofSealed: $0.wrapped) }
        try vault.noteHolder(Vault.Holder(id: "records:" + Hex.encode(store.storeId), location: "the test store", keyIds: keyIds))
    }

    /// A vault set up in the scratch directory, and a store unlocked with it.
    static func vaultKeyedStore(_ scratch: RecordsScratch) throws -> (Vault, RecordStore) {
        let vault = Vault(keychain: try Keychain(path: scratch.path("keychain.db")), configuration: .init(kdf: testKDF))
        try vault.setUp(passcode: secret("1234"), questions: ["q?"], answers: ["a"])
        let store = try makeStore(scratch, unlock: false)
        try store.unlock(with: vault)
        return (vault, store)
    }

    @Test(arguments: Backend.enabled)
    func rewrapMovesEveryStoreKeyToTheCurrentVaultKeyAndRetireIsGuarded(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let (vault, store) = try Self.vaultKeyedStore(scratch)
        defer { try? vault.keychain.close() }
        let first = try store.add(["toWhom": "Alice", "ssn": "1"], to: "gifts")
        _ = try store.rotateStoreKey(with: vault)  // two store keys, both wrapped by application key 1
        let second = try store.add(["toWhom": "Bob", "ssn": "2"], to: "gifts")
        try Self.note(store, in: vault)
        #expect(try store.wrappedKeys().keys.map { Vault.applicationKeyId(ofSealed: $0.wrapped) } == [1, 1])

        let rotation = try vault.rotateKey()
        #expect(rotation.keyId == 2)
        #expect(vault.holders(using: 1).map(\.location) == ["the test store"])
        #expect {
            try vault.retireKey(1)
        } throws: { error in
            guard case VaultError.keyInUse(1, let reason) = error else { return false }
            return reason.contains("the test store")
        }

        // A sealer that does not open the keys changes nothing.
        let before = try store.wrappedKeys().keys
        #expect(throws: RecordsError.self) { try store.rewrapKeys(with: KeyItemSealer(key: .random(count: 32))) }
        #expect(try store.wrappedKeys().keys == before)
        // Nor does a key id the store does not hold (the storage checks every id, in one transaction).
        #expect(throws: RecordsError.self) {
            try store.storage.rewrapKeys(before + [WrappedStoreKey(id: 99, wrapped: before[0].wrapped)])
        }
        #expect(try store.wrappedKeys().keys == before)

        let rewrapped = try store.rewrapKeys(with: vault)
        #expect(rewrapped.map(\.id) == [1, 2])
        #expect(try store.wrappedKeys().keys.map { Vault.applicationKeyId(ofSealed: $0.wrapped) } == [2, 2])
        try Self.note(store, in: vault)
        try vault.retireKey(1)

        // Without application key 1, a fresh handle on the store opens every record, old and new.
        let again = try scratch.reopen()
        try again.unlock(with: vault)
        #expect(try again.open(first).fields["ssn"] == "1")
        #expect(try again.open(second).fields["ssn"] == "2")
    }

    @Test func retireKeyWithForceRetiresAKeyAStoreStillUses() throws {
        let scratch = try RecordsScratch()
        let (vault, store) = try Self.vaultKeyedStore(scratch)
        defer { try? vault.keychain.close() }
        try Self.note(store, in: vault)
        try vault.rotateKey()
        #expect(throws: VaultError.self) { try vault.retireKey(1) }
        try vault.retireKey(1, force: true)
        // As the warning says: the store's keys no longer open.
        #expect(throws: RecordsError.self) { try scratch.reopen().unlock(with: vault) }
        // A holder with no key ids is forgotten.
        try vault.noteHolder(Vault.Holder(id: "records:" + Hex.encode(store.storeId), location: "x", keyIds: []))
        #expect(vault.holders().isEmpty)
    }
}
