import Foundation
import SFTestSupport
import SecureCore
@testable import SecureKeychain
import SecureKeyStore
import SecureKeys
import Testing

/// `KeyStore`: key pairs and partner keys by tag in a keychain, private keys sealed.
@Suite struct KeyStoreTests {
    /// A sealer that is always locked, as a locked vault is.
    struct LockedSealer: ItemSealer {
        func seal(_ plaintext: Data, context: Data) throws(SecureCoreError) -> Data { throw .locked }
        func open(_ sealed: Data, context: Data) throws(SecureCoreError) -> Data { throw .locked }
    }

    /// A fresh keychain in a temporary directory (removed with `directory`).
    final class Store {
        let directory: URL
        let keychain: Keychain
        let store: KeyStore
        let sealer: KeyItemSealer

        init() throws {
            directory = try TestSupport.temporaryDirectory("sf-keystore")
            keychain = try Keychain(path: directory.appendingPathComponent("keychain.db").path, configuration: .immediate)
            store = KeyStore(keychain: keychain)
            sealer = try KeyItemSealer(key: SecretBytes.random(count: 32))
        }

        deinit {
            try? keychain.close()
            try? FileManager.default.removeItem(at: directory)
        }

        func item(_ account: String) throws -> KeychainItem {
            try keychain.item(KeychainItem.Identity(.key, service: KeyStore.service, account: account))
        }
    }

    func expectStoreError<R>(_ expected: KeyStoreError, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R) {
        do {
            _ = try body()
            Issue.record("expected \(expected), got success", sourceLocation: sourceLocation)
        } catch {
            #expect(error as? KeyStoreError == expected, sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: [KeyType.p256, .p384, .p521, .ed25519, .x25519, .rsa2048])
    func storeAndLoadRoundTrip(type: KeyType) throws {
        let fixture = try Store()
        let key = try AsymmetricPrivateKey.generate(type)
        try fixture.store.storeKeyPair(key, tag: "app", sealer: fixture.sealer)

        let loaded = try fixture.store.privateKey(tag: "app", sealer: fixture.sealer)
        #expect(loaded.pkcs8DERRepresentation == key.pkcs8DERRepresentation)
        #expect(try fixture.store.publicKey(tag: "app").spkiDERRepresentation == key.publicKey.spkiDERRepresentation)

        let publicItem = try fixture.item("app")
        #expect(!publicItem.isSealed && publicItem.value == key.publicKey.spkiDERRepresentation)
        #expect(publicItem.attributes.label == type.rawValue && publicItem.attributes.comment == key.publicKey.fingerprint.hex)
        let privateItem = try fixture.item("app.private")
        #expect(privateItem.isSealed)
        #expect(privateItem.attributes.label == type.rawValue)
        let pkcs8 = key.pkcs8DERRepresentation.withUnsafeBytes { Data($0) }
        #expect(privateItem.value != pkcs8)
        #expect(privateItem.value.range(of: pkcs8) == nil, "the private key is stored sealed, never clear")
    }

    @Test func generateListsFingerprintsAndPartnerKeys() throws {
        let fixture = try Store()
        let signing = try fixture.store.generate(.ed25519, tag: "signing", sealer: fixture.sealer)
        let partner = try AsymmetricPrivateKey.generate(.x25519).publicKey
        try fixture.store.storePartnerKey(partner, tag: "bob")

        let entries = try fixture.store.list()
        #expect(entries == [
            KeyStore.Entry(tag: "bob", type: .x25519, fingerprint: partner.fingerprint, hasPrivateKey: false),
            KeyStore.Entry(tag: "signing", type: .ed25519, fingerprint: signing.fingerprint, hasPrivateKey: true),
        ])
        #expect(try fixture.store.publicKey(tag: "bob").spkiDERRepresentation == partner.spkiDERRepresentation)
        expectStoreError(.noPrivateKey(tag: "bob")) { try fixture.store.privateKey(tag: "bob", sealer: fixture.sealer) }
        expectStoreError(.noPrivateKey(tag: "bob")) { try fixture.store.regenerate(tag: "bob", sealer: fixture.sealer) }
        #expect(throws: KeychainError.itemNotFound(service: KeyStore.service, account: "bob.private")) {
            try fixture.item("bob.private")
        }

        let message = Data("signed by tag".utf8)
        let signature = try fixture.store.privateKey(tag: "signing", sealer: fixture.sealer).signature(for: message)
        try fixture.store.publicKey(tag: "signing").verify(signature, for: message)
    }

    @Test func wrongOrLockedSealerGivesTypedErrors() throws {
        let fixture = try Store()
        try fixture.store.generate(.p256, tag: "k", sealer: fixture.sealer)
        let other = try KeyItemSealer(key: SecretBytes.random(count: 32))
        expectStoreError(.sealedKeyDoesNotOpen(tag: "k")) { try fixture.store.privateKey(tag: "k", sealer: other) }
        expectStoreError(.sealerLocked) { try fixture.store.privateKey(tag: "k", sealer: LockedSealer()) }
        expectStoreError(.sealerLocked) { try fixture.store.generate(.p256, tag: "new", sealer: LockedSealer()) }
        #expect(try fixture.store.list().map(\.tag) == ["k"], "a failed generate stores nothing")
    }

    @Test func sealedPrivateKeyIsBoundToItsItemAndTamperEvident() throws {
        let fixture = try Store()
        try fixture.store.generate(.p256, tag: "a", sealer: fixture.sealer)
        try fixture.store.generate(.p256, tag: "b", sealer: fixture.sealer)
        let bPrivate = KeychainItem.Identity(.key, service: KeyStore.service, account: "b.private")
        let sealedA = try fixture.item("a.private").value
        // a's sealed key copied onto b's item does not open as b's key.
        try fixture.keychain.upsert(sealedA, for: bPrivate, attributes: nil, isSealed: true)
        expectStoreError(.sealedKeyDoesNotOpen(tag: "b")) { try fixture.store.privateKey(tag: "b", sealer: fixture.sealer) }
        // Any flipped byte of a sealed key is detected.
        for index in [0, sealedA.count / 2, sealedA.count - 1] {
            var tampered = sealedA
            tampered[index] ^= 0x01
            try fixture.keychain.upsert(
                tampered, for: KeychainItem.Identity(.key, service: KeyStore.service, account: "a.private"),
                attributes: nil, isSealed: true)
            expectStoreError(.sealedKeyDoesNotOpen(tag: "a")) { try fixture.store.privateKey(tag: "a", sealer: fixture.sealer) }
        }
    }

    @Test func aStoredKeyThatDoesNotParseIsNamedByItsTag() throws {
        let fixture = try Store()
        try fixture.store.generate(.p256, tag: "good", sealer: fixture.sealer)
        try fixture.store.generate(.ed25519, tag: "bad", sealer: fixture.sealer)
        // Whoever can write the file replaces a public item with bytes that are no SPKI.
        let publicItem = KeychainItem.Identity(.key, service: KeyStore.service, account: "bad")
        try fixture.keychain.replace([Keychain.NewItem(identity: publicItem, value: Data([0x30, 0x03, 0x02, 0x01, 0x00]))])
        for body: () throws -> Any in [
            { try fixture.store.publicKey(tag: "bad") }, { try fixture.store.list() },
            { try fixture.store.verifiedPublicKey(tag: "bad", sealer: fixture.sealer) },
        ] {
            do {
                _ = try body()
                Issue.record("a malformed stored key was accepted")
            } catch KeyStoreError.storedKeyMalformed(let tag, let cause) {
                #expect(tag == "bad")
                if case .malformedDER = cause {} else { Issue.record("unexpected cause \(cause)") }
            } catch {
                Issue.record("unexpected error \(error)")
            }
        }
        #expect(try fixture.store.publicKey(tag: "good").type == .p256, "the other keys stay readable")
        // A private item that opens but is no PKCS#8 is named the same way.
        let privateItem = KeychainItem.Identity(.key, service: KeyStore.service, account: "good.private")
        let garbage = try fixture.sealer.seal(Data("not a key".utf8), context: SealedValueBinding.context(for: privateItem))
        try fixture.keychain.upsert(garbage, for: privateItem, attributes: nil, isSealed: true)
        do {
            _ = try fixture.store.privateKey(tag: "good", sealer: fixture.sealer)
            Issue.record("a malformed private key was accepted")
        } catch KeyStoreError.storedKeyMalformed(let tag, _) {
            #expect(tag == "good")
        }
    }

    @Test func duplicateTagsAndInvalidTagsAreRefused() throws {
        let fixture = try Store()
        let first = try fixture.store.generate(.ed25519, tag: "dup", sealer: fixture.sealer)
        expectStoreError(.duplicateTag("dup")) { try fixture.store.generate(.p256, tag: "dup", sealer: fixture.sealer) }
        expectStoreError(.duplicateTag("dup")) {
            try fixture.store.storePartnerKey(AsymmetricPrivateKey.generate(.p256).publicKey, tag: "dup")
        }
        #expect(try fixture.store.publicKey(tag: "dup").spkiDERRepresentation == first.spkiDERRepresentation)
        expectStoreError(.invalidTag("x.private")) { try fixture.store.generate(.p256, tag: "x.private", sealer: fixture.sealer) }
        expectStoreError(.invalidTag("")) { try fixture.store.generate(.p256, tag: "", sealer: fixture.sealer) }
        expectStoreError(.keyNotFound(tag: "absent")) { try fixture.store.publicKey(tag: "absent") }
        expectStoreError(.keyNotFound(tag: "absent")) { try fixture.store.privateKey(tag: "absent", sealer: fixture.sealer) }
        expectStoreError(.keyNotFound(tag: "absent")) { try fixture.store.delete(tag: "absent") }
        expectStoreError(.keyNotFound(tag: "absent")) { try fixture.store.regenerate(tag: "absent", sealer: fixture.sealer) }
    }

    @Test func deleteRemovesBothItemsAndRegenerateReplacesThePair() throws {
        let fixture = try Store()
        let old = try fixture.store.generate(.p256, tag: "pair", sealer: fixture.sealer)
        let new = try fixture.store.regenerate(tag: "pair", sealer: fixture.sealer)
        #expect(new.type == .p256 && new.fingerprint != old.fingerprint)
        #expect(try fixture.store.privateKey(tag: "pair", sealer: fixture.sealer).publicKey.fingerprint == new.fingerprint)
        let changed = try fixture.store.regenerate(tag: "pair", type: .ed25519, sealer: fixture.sealer)
        #expect(try fixture.store.list() == [KeyStore.Entry(tag: "pair", type: .ed25519, fingerprint: changed.fingerprint, hasPrivateKey: true)])

        try fixture.store.delete(tag: "pair")
        #expect(try fixture.store.list().isEmpty)
        #expect(fixture.keychain.items(matching: KeychainQuery(.key)).isEmpty)
        try fixture.store.storePartnerKey(old, tag: "partner")
        try fixture.store.delete(tag: "partner")
        #expect(fixture.keychain.items(matching: KeychainQuery(.key)).isEmpty)
    }

    @Test func keysPersistAcrossReopening() throws {
        let fixture = try Store()
        let key = try fixture.store.generate(.x25519, tag: "durable", sealer: fixture.sealer)
        try fixture.keychain.close()
        let reopened = KeyStore(keychain: try Keychain(path: fixture.directory.appendingPathComponent("keychain.db").path))
        #expect(try reopened.privateKey(tag: "durable", sealer: fixture.sealer).publicKey.fingerprint == key.fingerprint)
        try reopened.keychain.close()
    }
}
