import Foundation
import SFTestSupport
import SecureCore
import SecureKeychain
import SecureKeys
import Testing

/// Issue 12 item 5: a stored pair's clear public half is bound to its sealed private half.
@Suite struct KeyPairBindingTests {
    @Test(arguments: [KeyType.p256, .ed25519, .x25519])
    func aSwappedPublicItemIsDetected(type: KeyType) throws {
        let directory = try TestSupport.temporaryDirectory("sf-keybinding")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keychain = try Keychain(path: directory.appendingPathComponent("keychain.db").path, configuration: .immediate)
        defer { try? keychain.close() }
        let store = KeyStore(keychain: keychain)
        let sealer = try KeyItemSealer(key: SecretBytes.random(count: 32))
        let own = try store.generate(type, tag: "me", sealer: sealer)
        #expect(try store.verifiedPublicKey(tag: "me", sealer: sealer).spkiDERRepresentation == own.spkiDERRepresentation)
        _ = try store.privateKey(tag: "me", sealer: sealer)

        // Whoever can write the file swaps the clear public item for their own key.
        let attacker = try AsymmetricPrivateKey.generate(type).publicKey
        let publicItem = KeychainItem.Identity(.key, service: KeyStore.service, account: "me")
        try keychain.replace([Keychain.NewItem(identity: publicItem, value: attacker.spkiDERRepresentation)])
        #expect(try store.publicKey(tag: "me").spkiDERRepresentation == attacker.spkiDERRepresentation)  // unauthenticated read, as documented
        #expect(throws: KeyError.publicKeyMismatch(tag: "me")) { try store.verifiedPublicKey(tag: "me", sealer: sealer) }
        #expect(throws: KeyError.publicKeyMismatch(tag: "me")) { try store.privateKey(tag: "me", sealer: sealer) }

        // A partner key has no sealed half and is returned as stored.
        try store.storePartnerKey(attacker, tag: "partner")
        #expect(try store.verifiedPublicKey(tag: "partner", sealer: sealer).spkiDERRepresentation == attacker.spkiDERRepresentation)
    }
}
