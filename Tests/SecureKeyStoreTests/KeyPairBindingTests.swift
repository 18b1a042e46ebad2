import Foundation
import SFTestSupport
import SecureCore
import SecureKeychain
import SecureKeyStore
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
        #expect(throws: KeyStoreError.publicKeyMismatch(tag: "me")) { try store.verifiedPublicKey(tag: "me", sealer: sealer) }
        #expect(throws: KeyStoreError.publicKeyMismatch(tag: "me")) { try store.privateKey(tag: "me", sealer: sealer) }

        // A partner key stored without a sealer has nothing vouching for it: refused when verified.
        try store.storePartnerKey(attacker, tag: "partner")
        #expect(try store.publicKey(tag: "partner").spkiDERRepresentation == attacker.spkiDERRepresentation)
        #expect(throws: KeyStoreError.unauthenticatedKey(tag: "partner")) { try store.verifiedPublicKey(tag: "partner", sealer: sealer) }
        // Stored again with the sealer, the same key is authenticated; another key stays refused.
        #expect(throws: KeyStoreError.duplicateTag("partner")) {
            try store.storePartnerKey(AsymmetricPrivateKey.generate(type).publicKey, tag: "partner", sealer: sealer)
        }
        try store.storePartnerKey(attacker, tag: "partner", sealer: sealer)
        #expect(try store.verifiedPublicKey(tag: "partner", sealer: sealer).spkiDERRepresentation == attacker.spkiDERRepresentation)
    }

    /// Issue 21: whoever can write the file cannot turn a pair into a partner key (deleting its
    /// private item, with or without its kind record), swap an authenticated partner key, or move
    /// one tag's kind record to another.
    @Test(arguments: [KeyType.p256, .ed25519, .x25519])
    func aPairStaysAPairAndPartnerKeysAreBound(type: KeyType) throws {
        let directory = try TestSupport.temporaryDirectory("sf-keykind")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keychain = try Keychain(path: directory.appendingPathComponent("keychain.db").path, configuration: .immediate)
        defer { try? keychain.close() }
        let store = KeyStore(keychain: keychain)
        let sealer = try KeyItemSealer(key: SecretBytes.random(count: 32))
        func item(_ service: String, _ account: String) -> KeychainItem.Identity {
            KeychainItem.Identity(.key, service: service, account: account)
        }
        /// Copies the stored row of one kind record to another tag, as an edit of the file would
        /// (python's sqlite3 as the independent writer), then reloads the view.
        func copyKindRecord(from: String, to: String) throws {
            let edited = try TestSupport.run("python3", ["-c", """
                import sqlite3, sys
                db = sqlite3.connect(sys.argv[1])
                db.execute("DELETE FROM items WHERE service = ? AND account = ?", (sys.argv[2], sys.argv[4]))
                db.execute("INSERT INTO items SELECT class, access_group, service, ?, label, comment, generic, created, modified, sealed, value "
                           "FROM items WHERE service = ? AND account = ?", (sys.argv[4], sys.argv[2], sys.argv[3]))
                db.commit()
                """, keychain.path, KeyStore.kindService, from, to])
            try #require(edited.status == 0, "python3's sqlite3 module: \(edited.stderrText)")
            try keychain.synchronizeBlocking()
        }

        try store.generate(type, tag: "me", sealer: sealer)
        try store.generate(type, tag: "other", sealer: sealer)
        let friend = try AsymmetricPrivateKey.generate(type).publicKey
        try store.storePartnerKey(friend, tag: "friend", sealer: sealer)

        // The private half deleted: still a pair, now one that cannot be used.
        _ = try keychain.delete([item(KeyStore.service, "me" + KeyStore.privateSuffix)])
        #expect(try store.list().first { $0.tag == "me" }?.hasPrivateKey == false)
        #expect(throws: KeyStoreError.privateKeyMissing(tag: "me")) { try store.verifiedPublicKey(tag: "me", sealer: sealer) }
        #expect(throws: KeyStoreError.privateKeyMissing(tag: "me")) { try store.privateKey(tag: "me", sealer: sealer) }
        // And its kind record too: nothing vouches for the public key left.
        _ = try keychain.delete([item(KeyStore.kindService, "me")])
        #expect(throws: KeyStoreError.unauthenticatedKey(tag: "me")) { try store.verifiedPublicKey(tag: "me", sealer: sealer) }
        // Another tag's kind record moved here does not open (it is bound to its tag).
        try copyKindRecord(from: "other", to: "me")
        #expect(throws: KeyStoreError.sealedKeyDoesNotOpen(tag: "me")) { try store.verifiedPublicKey(tag: "me", sealer: sealer) }

        // An authenticated partner key swapped for another key is detected.
        #expect(try store.verifiedPublicKey(tag: "friend", sealer: sealer).spkiDERRepresentation == friend.spkiDERRepresentation)
        let attacker = try AsymmetricPrivateKey.generate(type).publicKey
        try keychain.replace([Keychain.NewItem(identity: item(KeyStore.service, "friend"), value: attacker.spkiDERRepresentation)])
        #expect(throws: KeyStoreError.publicKeyMismatch(tag: "friend")) { try store.verifiedPublicKey(tag: "friend", sealer: sealer) }
        // Another sealer (another vault) opens no record.
        let stranger = try KeyItemSealer(key: SecretBytes.random(count: 32))
        #expect(throws: KeyStoreError.sealedKeyDoesNotOpen(tag: "other")) { try store.verifiedPublicKey(tag: "other", sealer: stranger) }

        // Deleting a tag removes every item of it, the kind record included.
        try store.delete(tag: "other")
        #expect(keychain.items(matching: KeychainQuery(.key, service: KeyStore.kindService, account: "other")).isEmpty)
    }
}
