import AgeEncryption
import Foundation
import SecureCore
import Testing

/// Encrypt/decrypt round trips at the chunk boundaries, through every API.
@Suite struct RoundTripTests {
    static let sizes = [0, 1, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 2 * 64 * 1024, 32 * 64 * 1024, 33 * 64 * 1024 + 7]

    @Test(arguments: sizes, [false, true])
    func x25519(size: Int, armored: Bool) throws {
        let identity = Age.X25519Identity()
        let plaintext = SecureRandom.bytes(count: size)
        let file = try Age.encrypt(plaintext, to: [identity.recipient], armored: armored)
        #expect(try Age.decrypt(file, identities: [identity]) == plaintext)
        #expect(file.starts(with: Data((armored ? "-----BEGIN AGE" : "age-encryption.org/v1\n").utf8)))
    }

    @Test func streamingReadInSmallPieces() throws {
        let identity = Age.X25519Identity()
        let plaintext = SecureRandom.bytes(count: 3 * 64 * 1024 + 5)
        let file = try Age.encrypt(plaintext, to: [identity.recipient])
        let decryptor = try Age.Decryptor(from: Age.DataSource(file), identities: [identity])
        var collected = Data()
        var buffer = [UInt8](repeating: 0, count: 1000)
        while true {
            let n = try buffer.withUnsafeMutableBytes { try decryptor.read(into: $0) }
            collected.append(contentsOf: buffer[0..<n])
            if n < buffer.count { break }
        }
        #expect(collected == plaintext)
    }

    @Test func streamingWriteInSmallPieces() throws {
        let identity = Age.X25519Identity()
        let plaintext = SecureRandom.bytes(count: 40 * 64 * 1024 + 3)
        let sink = Age.DataSink()
        let encryptor = try Age.Encryptor(recipients: [identity.recipient], to: sink)
        var offset = 0
        while offset < plaintext.count {
            let n = min(7777, plaintext.count - offset)
            try encryptor.write(plaintext[offset..<offset + n])
            offset += n
        }
        try encryptor.finish()
        #expect(try Age.decrypt(sink.data, identities: [identity]) == plaintext)
    }

    @Test func multipleRecipientsEachDecrypt() throws {
        let a = Age.X25519Identity(), b = Age.X25519Identity()
        let file = try Age.encrypt(Data("hello".utf8), to: [a.recipient, b.recipient])
        #expect(try Age.decrypt(file, identities: [b]) == Data("hello".utf8))
        #expect(try Age.decrypt(file, identities: [a]) == Data("hello".utf8))
        #expect(throws: AgeError.noIdentityMatched) { try Age.decrypt(file, identities: [Age.X25519Identity()]) }
    }

    @Test func passphrase() throws {
        let recipient = try Age.ScryptRecipient(passphrase: SecretBytes(Data("correct horse".utf8)), workFactor: 10)
        let file = try Age.encrypt(Data("secret".utf8), to: [recipient])
        let right = Age.ScryptIdentity(passphrase: SecretBytes(Data("correct horse".utf8)))
        let wrong = Age.ScryptIdentity(passphrase: SecretBytes(Data("wrong".utf8)))
        #expect(try Age.decrypt(file, identities: [right]) == Data("secret".utf8))
        #expect(throws: AgeError.noIdentityMatched) { try Age.decrypt(file, identities: [wrong]) }
        let strict = Age.ScryptIdentity(passphrase: SecretBytes(Data("correct horse".utf8)), workFactorCeiling: 9)
        #expect(throws: AgeError.workFactorAboveCeiling(found: 10, ceiling: 9)) { try Age.decrypt(file, identities: [strict]) }
    }

    @Test func scryptMustBeAlone() throws {
        let scrypt = try Age.ScryptRecipient(passphrase: SecretBytes(Data("p".utf8)), workFactor: 10)
        #expect(throws: AgeError.self) { try Age.encrypt(Data(), to: [scrypt, Age.X25519Identity().recipient]) }
        #expect(throws: AgeError.self) { try Age.encrypt(Data(), to: []) }
    }

    @Test func keyEncodingsRoundTrip() throws {
        let identity = Age.X25519Identity()
        let parsed = try Age.X25519Identity(identity.secretString)
        #expect(parsed.recipient == identity.recipient)
        #expect(try Age.X25519Recipient(identity.recipient.string) == identity.recipient)
        #expect(identity.secretString.hasPrefix("AGE-SECRET-KEY-1"))
        #expect(identity.recipient.string.hasPrefix("age1"))
        var corrupted = Array(identity.recipient.string)
        corrupted[10] = corrupted[10] == "q" ? "p" : "q"
        #expect(throws: AgeError.self) { try Age.X25519Recipient(String(corrupted)) }
        #expect(throws: AgeError.self) { try Age.X25519Recipient("Age1" + identity.recipient.string.dropFirst(4)) }
        // The other letter case is valid Bech32, but age compares the prefix exactly: an `AGE1…`
        // recipient and an `age-secret-key-1…` identity are refused (they were accepted).
        #expect(throws: AgeError.self) { try Age.X25519Recipient(identity.recipient.string.uppercased()) }
        #expect(throws: AgeError.self) { try Age.X25519Identity(identity.secretString.lowercased()) }
        let hybrid = try Age.HybridIdentity()
        #expect(throws: AgeError.self) { try Age.HybridRecipient(hybrid.recipient.description.uppercased()) }
        #expect(throws: AgeError.self) { try Age.HybridIdentity(hybrid.secretString.lowercased()) }
        #expect(try Age.HybridIdentity(hybrid.secretString).recipient.description == hybrid.recipient.description)
    }

    @Test func identityAndRecipientFiles() throws {
        let a = Age.X25519Identity(), b = Age.X25519Identity()
        let identities = try Age.parseIdentities("# comment\n\n\(a.secretString)\r\n# x\n\(b.secretString)\n")
        #expect(identities.count == 2)
        let recipients = try Age.parseRecipients("# r\n\(a.recipient.string)\n\n\(b.recipient.string)\n")
        #expect(recipients.count == 2)
        #expect(throws: AgeError.invalidIdentity("the identity file holds no identity")) { try Age.parseIdentities("# nothing\n") }
        #expect(throws: AgeError.invalidRecipient("line 1: not an age1… X25519 recipient")) { try Age.parseRecipients("age1bogus\n") }
    }

    @available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *)
    @Test func hybridPostQuantum() throws {
        let identity = try Age.HybridIdentity()
        let plaintext = SecureRandom.bytes(count: 64 * 1024 + 1)
        let file = try Age.encrypt(plaintext, to: [identity.recipient])
        #expect(try Age.decrypt(file, identities: [identity]) == plaintext)
        let parsed = try Age.parseIdentities(identity.secretString + "\n")
        #expect(try Age.decrypt(file, identities: parsed) == plaintext)
        let recipient = try Age.parseRecipient(identity.recipient.description)
        #expect(try Age.decrypt(Age.encrypt(Data("pq".utf8), to: [recipient]), identities: [identity]) == Data("pq".utf8))
        #expect(throws: AgeError.noIdentityMatched) { try Age.decrypt(file, identities: [try Age.HybridIdentity()]) }
    }
}
