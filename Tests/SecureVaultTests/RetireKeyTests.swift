import Foundation
import SecureCore
@testable import SecureKeychain
import SecureVault
import Testing

/// Issue 12 item 6: rotation re-seals key-class items too, and old keys can be retired.
@Suite struct RetireKeyTests {
    private func keyId(_ sealed: Data) -> UInt32 {
        sealed.dropFirst(4).prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    @Test func rotationResealsStoredKeysAndOldKeysRetireOnceUnused() throws {
        let scratch = try VaultScratch()
        let vault = try scratch.setUpVault()
        let keychain = vault.keychain
        try keychain.setSecurePassword("pw", service: "mail", account: "me", sealer: vault)
        let keyItem = KeychainItem.Identity(.key, service: "securefoundation.keys", account: "me.private")
        try keychain.add([Keychain.NewItem(identity: keyItem, value: Data("pkcs8 bytes".utf8), sealer: vault)])
        let oldData = try vault.encrypt(Data("old".utf8))
        #expect(vault.keyIdsInUse() == [1])
        #expect(vaultError { try vault.retireKey(1) } == .keyInUse(1, reason: "it is the current key"))

        let rotation = try vault.rotateKey()
        #expect(rotation.keyId == 2 && rotation.resealed == 2 && rotation.skipped == 0)
        #expect(keyId(try keychain.item(keyItem).value) == 2, "the stored private key was re-sealed")
        #expect(try keychain.openSealedValue(keyItem, sealer: vault) == Data("pkcs8 bytes".utf8))
        #expect(vault.keyIdsInUse() == [2])

        try vault.retireKey(1)
        #expect(vault.keyIds?.all == [2])
        #expect(vaultError { _ = try vault.decrypt(oldData) } == .unknownKeyId(1))
        #expect(try keychain.securePassword(service: "mail", account: "me", sealer: vault) == "pw")
        // The retirement is durable: a fresh unlock holds only key 2.
        let reopened = Vault(keychain: try scratch.keychain(), configuration: configuration())
        try reopened.unlock(passcode: secret("old passcode"))
        #expect(reopened.keyIds?.all == [2])
        #expect(vaultError { try reopened.retireKey(7) } == .unknownKeyId(7))
    }

    @Test func aKeyStillSealingAnItemIsNotRetired() throws {
        let scratch = try VaultScratch()
        let vault = try scratch.setUpVault()
        let keychain = vault.keychain
        try keychain.setSecurePassword("pw", service: "mail", account: "me", sealer: vault)
        let underKey1 = try keychain.item(.init(service: "mail", account: "me")).value
        _ = try vault.rotateKey()
        // As an interrupted rotation leaves it: an item still sealed under key 1.
        try keychain.upsert(underKey1, for: .init(service: "mail", account: "me"), attributes: nil, isSealed: true)
        #expect(vault.keyIdsInUse() == [1])
        #expect(vaultError { try vault.retireKey(1) } == .keyInUse(1, reason: "sealed keychain items use it; run rotate first"))
        #expect(vault.keyIds?.all == [1, 2])
        #expect(try keychain.securePassword(service: "mail", account: "me", sealer: vault) == "pw")
    }
}
