import Crypto
import AgeEncryption
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// `Age.recipient(of:)`: the recipient `age -e -i` (and `sf encrypt -i`, `sf keygen -y`) derive
/// from an identity.
struct IdentityRecipientTests {
    /// A low-order X25519 point (every agreement with it gives the all-zero secret, which anyone
    /// can compute; swift-crypto does not refuse it) is refused as a recipient when wrapping, and
    /// as a stanza's share when unwrapping, as age does.
    @Test(arguments: TestSupport.lowOrderX25519Points)
    func lowOrderX25519PointsAreRefused(point: Data) throws {
        let recipient = Age.X25519Recipient(publicKey: try Curve25519.KeyAgreement.PublicKey(rawRepresentation: point))
        #expect(throws: AgeError.invalidRecipient("the X25519 key agreement failed (a low-order public key)")) {
            try recipient.wrap(fileKey: SecretBytes.random(count: 16))
        }
        var share = point.base64EncodedString()
        share.removeAll { $0 == "=" }
        let stanza = Age.Stanza(arguments: ["X25519", share], body: Data(count: 32))
        #expect(throws: AgeError.malformedHeader("an X25519 share is a low-order point")) {
            try Age.X25519Identity().unwrap(stanzas: [stanza])
        }
    }

    /// A file encrypted to the derived recipient opens with the identity and with nothing else.
    func expectRecipientOpensOnlyFor(_ identity: any Age.Identity) throws {
        let recipient = try #require(Age.recipient(of: identity))
        let plaintext = SecureRandom.bytes(count: 1000)
        let file = try Age.encrypt(plaintext, to: [recipient])
        #expect(try Age.decrypt(file, identities: [identity]) == plaintext)
        #expect(throws: AgeError.noIdentityMatched) { try Age.decrypt(file, identities: [Age.X25519Identity()]) }
    }

    @Test func x25519AndHybridIdentitiesHaveTheirRecipient() throws {
        let x25519 = Age.X25519Identity()
        try expectRecipientOpensOnlyFor(x25519)
        #expect((Age.recipient(of: x25519) as? Age.X25519Recipient)?.description == x25519.recipient.description)
        let hybrid = try Age.HybridIdentity()
        try expectRecipientOpensOnlyFor(hybrid)
        #expect((Age.recipient(of: hybrid) as? Age.HybridRecipient)?.description == hybrid.recipient.description)
    }

    // Live peer: ssh-keygen makes the key.
    @Test(.requires(.sshKeygen)) func sshEd25519IdentityHasItsRecipient() throws {
        let (dir, privateKey, publicKey) = try SSHTests.keyPair("ed25519")
        defer { try? FileManager.default.removeItem(at: dir) }
        let identity = try #require(try Age.parseIdentities(privateKey).first)
        try expectRecipientOpensOnlyFor(identity)
        let fromLine = try Age.parseRecipient(publicKey)
        let file = try Age.encrypt(Data("x".utf8), to: [fromLine])
        #expect(try Age.decrypt(file, identities: [identity]) == Data("x".utf8))
    }

    @Test func aPassphraseIdentityHasNoRecipient() {
        #expect(Age.recipient(of: Age.ScryptIdentity(passphrase: SecretBytes(Data("pw".utf8)))) == nil)
    }
}
