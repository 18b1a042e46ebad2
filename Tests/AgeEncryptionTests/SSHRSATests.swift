import AgeEncryption
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// age's `ssh-rsa` recipient type (RSA-OAEP-SHA256 with the label `age-encryption.org/v1/ssh-rsa`),
/// against the reference age and rage (pyrage), with keys made by ssh-keygen.
@Suite(.serialized) struct SSHRSATests {
    /// A fresh OpenSSH RSA key pair of `bits` (with `passphrase`, if any) in a temporary directory:
    /// `id` and `id.pub`.
    static func keyPair(bits: Int = 2048, passphrase: String = "") throws -> URL {
        let keygen = try PeerTests.require(.sshKeygen)
        let dir = try TestSupport.temporaryDirectory("age-ssh-rsa")
        let result = try TestSupport.run(
            keygen, ["-q", "-t", "rsa", "-b", String(bits), "-N", passphrase, "-C", "rsa test", "-f", dir.appendingPathComponent("id").path])
        try #require(result.status == 0, "\(result.stderrText)")
        return dir
    }

    static func text(_ dir: URL, _ name: String) throws -> String {
        try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
    }

    // Live peer: ssh-keygen makes the keys.
    @Test(.requires(.sshKeygen), arguments: [2048, 3072, 4096])
    func roundTripInProcess(bits: Int) throws {
        let dir = try Self.keyPair(bits: bits)
        defer { try? FileManager.default.removeItem(at: dir) }
        let recipient = try Age.parseRecipient(try Self.text(dir, "id.pub"))
        #expect(recipient is Age.SSHRSARecipient)
        let identities = try Age.parseIdentities(try Self.text(dir, "id"))
        #expect(identities.first is Age.SSHRSAIdentity)
        for size in [0, 1, 64 * 1024 + 1] {
            let plaintext = SecureRandom.bytes(count: size)
            #expect(try Age.decrypt(try Age.encrypt(plaintext, to: [recipient]), identities: identities) == plaintext)
        }
        // The stanza: `-> ssh-rsa TAG` and a body of k bytes.
        let stanzas = try recipient.wrap(fileKey: SecretBytes.random(count: 16))
        #expect(stanzas.count == 1 && stanzas[0].arguments.count == 2 && stanzas[0].type == "ssh-rsa")
        #expect(stanzas[0].body.count == bits / 8)
    }

    /// A key file whose public key spells e with leading zero bytes (`00 00 01 00 01`, which the
    /// SSH decoder accepts and re-encodes minimally) still opens files encrypted to its `.pub`: the
    /// identity's key tag is over the minimal encoding, as the recipient's is and as age's is
    /// (pk.Marshal()). It was over the file's own bytes, so no stanza ever matched.
    // Live peer: ssh-keygen makes the key.
    @Test(.requires(.sshKeygen))
    func aKeyFileWithANonMinimalExponentOpensItsFiles() throws {
        let dir = try Self.keyPair()
        defer { try? FileManager.default.removeItem(at: dir) }
        let recipient = try Age.parseRecipient(try Self.text(dir, "id.pub"))
        let file = try Age.encrypt(Data("to the .pub".utf8), to: [recipient])
        // The key file's binary form: magic, cipher, KDF, KDF options, key count, public key, private section.
        let lines = try Self.text(dir, "id").split(separator: "\n").filter { !$0.hasPrefix("-----") }
        var binary = [UInt8](try #require(Data(base64Encoded: lines.joined())))
        func string(at offset: Int) -> (value: [UInt8], end: Int) {
            let length = binary[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            return (Array(binary[offset + 4..<offset + 4 + length]), offset + 4 + length)
        }
        var offset = 15  // "openssh-key-v1\0"
        for _ in 0..<3 { offset = string(at: offset).end }
        offset += 4
        let (blob, blobEnd) = string(at: offset)
        // The blob: string "ssh-rsa", mpint e (3 bytes: 01 00 01), mpint n.
        let typeEnd = 4 + 7
        try #require(Array(blob[typeEnd..<typeEnd + 7]) == [0, 0, 0, 3, 1, 0, 1])
        let padded = Array(blob[..<typeEnd]) + [0, 0, 0, 5, 0, 0, 1, 0, 1] + Array(blob[(typeEnd + 7)...])
        let length = [UInt8](withUnsafeBytes(of: UInt32(padded.count).bigEndian, Array.init))
        binary = Array(binary[..<offset]) + length + padded + Array(binary[blobEnd...])
        let base64 = Data(binary).base64EncodedString()
        let wrapped = stride(from: 0, to: base64.count, by: 70).map { start in
            String(base64.dropFirst(start).prefix(70))
        }
        let keyFile = (["-----BEGIN OPENSSH PRIVATE KEY-----"] + wrapped + ["-----END OPENSSH PRIVATE KEY-----", ""]).joined(separator: "\n")
        let identities = try Age.parseIdentities(keyFile)
        #expect(try Age.decrypt(file, identities: identities) == Data("to the .pub".utf8))
    }

    /// Every byte of the wrapped file key flipped, the stanza truncated or extended, a wrong key
    /// with the same tag, a wrong number of arguments: nothing opens, and each is a typed error.
    // Live peer: ssh-keygen makes the keys.
    @Test(.requires(.sshKeygen))
    func tamperedStanzasDoNotOpen() throws {
        let dir = try Self.keyPair()
        defer { try? FileManager.default.removeItem(at: dir) }
        let identity = try #require(try Age.parseIdentities(try Self.text(dir, "id")).first as? Age.SSHRSAIdentity)
        let fileKey = SecretBytes.random(count: 16)
        let stanza = try #require(try identity.recipient.wrap(fileKey: fileKey).first)
        #expect(try identity.unwrap(stanzas: [stanza]) == fileKey)
        for index in stanza.body.indices {
            var flipped = stanza
            flipped.body[index] ^= 0x01
            #expect(try identity.unwrap(stanzas: [flipped]) == nil, "byte \(index)")
        }
        for body in [stanza.body.dropLast(), stanza.body + [0], Data(), Data(repeating: 0xff, count: stanza.body.count)] {
            #expect(try identity.unwrap(stanzas: [Age.Stanza(arguments: stanza.arguments, body: Data(body))]) == nil)
        }
        // A wrapped key that is not 16 bytes: decrypts, but is not an age file key.
        let recipient = try Age.parseRecipient(try Self.text(dir, "id.pub"))
        let long = try recipient.wrap(fileKey: SecretBytes.random(count: 32))
        #expect(throws: AgeError.malformedHeader("an ssh-rsa stanza holds a file key of 32 bytes, not 16")) {
            try identity.unwrap(stanzas: long)
        }
        #expect(throws: AgeError.self) { try identity.unwrap(stanzas: [Age.Stanza(arguments: ["ssh-rsa"], body: stanza.body)]) }
        #expect(throws: AgeError.self) {
            try identity.unwrap(stanzas: [Age.Stanza(arguments: stanza.arguments + ["x"], body: stanza.body)])
        }
        // Another key's stanza (a different tag) is passed over; another key's identity finds none.
        let other = try Self.keyPair()
        defer { try? FileManager.default.removeItem(at: other) }
        let otherIdentities = try Age.parseIdentities(try Self.text(other, "id"))
        let file = try Age.encrypt(Data("x".utf8), to: [recipient])
        #expect(throws: AgeError.noIdentityMatched) { try Age.decrypt(file, identities: otherIdentities) }
        // A stanza for our tag wrapped to another key (a tag collision): only the first stanza with
        // our tag is tried, as in age, so ours after it is not reached; before it, ours opens.
        let otherRecipient = try #require(try Age.parseRecipient(try Self.text(other, "id.pub")) as? Age.SSHRSARecipient)
        var collided = try #require(try otherRecipient.wrap(fileKey: fileKey).first)
        collided.arguments[1] = stanza.arguments[1]
        #expect(try identity.unwrap(stanzas: [collided, stanza]) == nil)
        #expect(try identity.unwrap(stanzas: [stanza, collided]) == fileKey)
        #expect(try identity.unwrap(stanzas: [collided]) == nil)
    }

    /// Wraps the file key to `genuine` after `forgeries` stanzas with the same key tag whose bodies
    /// are random (what a hostile header holds).
    struct ForgedFirst: Age.Recipient {
        let genuine: Age.SSHRSARecipient
        let forgeries: Int

        func wrap(fileKey: SecretBytes) throws(AgeError) -> [Age.Stanza] {
            let real = try genuine.wrap(fileKey: fileKey)
            let forged = (0..<forgeries).map { _ in
                Age.Stanza(arguments: real[0].arguments, body: SecureRandom.bytes(count: real[0].body.count))
            }
            return forged + real
        }
    }

    /// A header whose first ssh-rsa stanza with the identity's tag is forged and whose next is
    /// genuine does not open: only the first is tried (one RSA private operation, as age's agessh),
    /// so 1,023 forged stanzas cost one operation, not 1,023. The error is the one for another
    /// key's file.
    // Live peer: ssh-keygen makes the key.
    @Test(.requires(.sshKeygen))
    func onlyTheFirstStanzaWithTheTagIsTried() throws {
        let dir = try Self.keyPair()
        defer { try? FileManager.default.removeItem(at: dir) }
        let identities = try Age.parseIdentities(try Self.text(dir, "id"))
        let recipient = try #require(try Age.parseRecipient(try Self.text(dir, "id.pub")) as? Age.SSHRSARecipient)
        let plaintext = Data("forged first".utf8)
        let genuine = try Age.encrypt(plaintext, to: [ForgedFirst(genuine: recipient, forgeries: 0)])
        #expect(try Age.decrypt(genuine, identities: identities) == plaintext)
        for forgeries in [1, 1023] {
            let file = try Age.encrypt(plaintext, to: [ForgedFirst(genuine: recipient, forgeries: forgeries)])
            #expect(throws: AgeError.noIdentityMatched, "\(forgeries) forged") { try Age.decrypt(file, identities: identities) }
        }
    }

    /// Public exponents over 24 bits are refused for ssh-rsa recipients, as x/crypto/ssh (and so
    /// age) refuses them: BoringSSL, which does the private operation, refuses e over 33 bits, so a
    /// file encrypted to a 40-bit e could never be decrypted.
    @Test func exponentsOverTwentyFourBitsAreRefused() throws {
        guard case .rsa(_, let modulus) = try SSHPublicKey(line: "ssh-rsa \(SSHTests.rsaBlob)").key else {
            Issue.record("the fixture is not an RSA key")
            return
        }
        let line = { (exponent: [UInt8]) throws -> String in try SSHPublicKey(.rsa(exponent: Data(exponent), modulus: modulus)).line }
        #expect(try Age.parseRecipient(line([0x01, 0x00, 0x01])) is Age.SSHRSARecipient)
        #expect(try Age.parseRecipient(line([0xff, 0xff, 0xff])) is Age.SSHRSARecipient)  // 24 bits
        let refused: [(exponent: [UInt8], bits: Int)] = [([0x01, 0x00, 0x00, 0x01], 25), ([0x80, 0x00, 0x00, 0x00, 0x01], 40)]
        for (exponent, bits) in refused {
            #expect(throws: AgeError.invalidRecipient("the ssh-rsa key's public exponent has \(bits) bits; age accepts at most 24")) {
                try Age.parseRecipient(line(exponent))
            }
        }
    }

    // Live peers: ssh-keygen makes the keys, the reference age reads and writes the files.
    @Test(.requires(.sshKeygen, .age), arguments: [2048, 4096], [false, true])
    func withAge(bits: Int, armored: Bool) throws {
        let age = try PeerTests.require(.age), sf = try PeerTests.sf()
        let dir = try Self.keyPair(bits: bits)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let plaintext = SecureRandom.bytes(count: 100_000)
        try plaintext.write(to: dir.appendingPathComponent("plain"))
        let armor = armored ? ["-a"] : []

        let byAge = try TestSupport.run(age, ["-R", path("id.pub")] + armor + ["-o", path("age.age"), path("plain")])
        try #require(byAge.status == 0, "\(byAge.stderrText)")
        let sfOpens = try TestSupport.run(sf, ["decrypt", "-i", path("id"), path("age.age")])
        #expect(sfOpens.status == 0 && sfOpens.stdout == plaintext, "\(sfOpens.stderrText)")

        let bySf = try TestSupport.run(sf, ["encrypt", "-R", path("id.pub")] + armor + ["-o", path("sf.age"), path("plain")])
        try #require(bySf.status == 0, "\(bySf.stderrText)")
        let ageOpens = try TestSupport.run(age, ["-d", "-i", path("id"), path("sf.age")])
        #expect(ageOpens.status == 0 && ageOpens.stdout == plaintext, "\(ageOpens.stderrText)")
    }

    /// ssh-rsa mixed with X25519 and ssh-ed25519 recipients, as age mixes them: every identity
    /// opens the file, with sf and with age; age's own mixed file opens with sf.
    // Live peers: ssh-keygen makes the keys, the reference age reads and writes the files.
    @Test(.requires(.sshKeygen, .age))
    func mixedWithOtherClassicalRecipients() throws {
        let age = try PeerTests.require(.age), sf = try PeerTests.sf()
        let dir = try Self.keyPair()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let keygen = try PeerTests.require(.sshKeygen)
        #expect(try TestSupport.run(keygen, ["-q", "-t", "ed25519", "-N", "", "-f", path("ed")]).status == 0)
        #expect(try TestSupport.run(sf, ["keygen", "-o", path("x.key")]).status == 0)
        let x25519 = try TestSupport.run(sf, ["keygen", "-y", path("x.key")]).stdoutText
        try Data((try Self.text(dir, "id.pub") + (try Self.text(dir, "ed.pub")) + x25519).utf8).write(to: dir.appendingPathComponent("all"))
        let plaintext = Data("to three kinds of key".utf8)
        for tool in [sf, age] {
            let encrypted = try TestSupport.run(tool, (tool == sf ? ["encrypt"] : []) + ["-R", path("all")], stdin: plaintext)
            try #require(encrypted.status == 0, "\(tool): \(encrypted.stderrText)")
            for identity in ["id", "ed", "x.key"] {
                for reader in [sf, age] {
                    let opened = try TestSupport.run(reader, (reader == sf ? ["decrypt"] : ["-d"]) + ["-i", path(identity)], stdin: encrypted.stdout)
                    #expect(opened.status == 0 && opened.stdout == plaintext, "\(tool) → \(reader) -i \(identity): \(opened.stderrText)")
                }
            }
        }
    }

    /// Keys under 2048 bits are refused as recipients by age and by sf, with a message saying why.
    // Live peers: ssh-keygen makes the key, the reference age refuses it too.
    @Test(.requires(.sshKeygen, .age))
    func smallKeysAreRefusedAsByAge() throws {
        let age = try PeerTests.require(.age), sf = try PeerTests.sf()
        let dir = try Self.keyPair(bits: 1024)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        #expect(throws: AgeError.invalidRecipient("the ssh-rsa key has 1024 bits; age needs at least 2048")) {
            try Age.parseRecipient(try Self.text(dir, "id.pub"))
        }
        let bySf = try TestSupport.run(sf, ["encrypt", "-R", path("id.pub")], stdin: Data("x".utf8))
        #expect(bySf.status == 1 && bySf.stdout.isEmpty && bySf.stderrText.contains("at least 2048"), "\(bySf.stderrText)")
        let byAge = try TestSupport.run(age, ["-R", path("id.pub")], stdin: Data("x".utf8))
        #expect(byAge.status != 0 && byAge.stdout.isEmpty, "age accepted a 1024-bit key")
        // The identity is refused too (nothing could have been encrypted to it).
        #expect(throws: AgeError.self) { try Age.parseIdentities(try Self.text(dir, "id")) }
    }

    /// A passphrase-protected OpenSSH key is refused with a message that says what to do: decrypting
    /// it needs bcrypt_pbkdf (Blowfish), which swift-crypto does not provide (docs/FORMATS.md).
    // Live peer: ssh-keygen makes the key.
    @Test(.requires(.sshKeygen))
    func passphraseProtectedKeysAreRefusedClearly() throws {
        let sf = try PeerTests.sf()
        let dir = try Self.keyPair(passphrase: "secret words")
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(throws: AgeError.openSSHKeyFile(.passphraseProtected)) { try Age.parseIdentities(try Self.text(dir, "id")) }
        let recipient = try Age.parseRecipient(try Self.text(dir, "id.pub"))
        let file = try Age.encrypt(Data("x".utf8), to: [recipient])
        let result = try TestSupport.run(sf, ["decrypt", "-i", dir.appendingPathComponent("id").path], stdin: file)
        #expect(result.status == 1 && result.stdout.isEmpty && result.stderrText.contains("ssh-keygen -p"), "\(result.stderrText)")
    }

    /// Both directions with rage, through pyrage's ssh recipients and identities.
    // Live peers: ssh-keygen makes the key; Python pyrage (rage) encrypts and decrypts.
    @Test(.requires(.sshKeygen, .pyrage))
    func withPyrage() throws {
        let python = try PeerTests.require(.pyrage), sf = try PeerTests.sf()
        let dir = try Self.keyPair()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let plaintext = SecureRandom.bytes(count: 70_000)
        try plaintext.write(to: dir.appendingPathComponent("plain"))
        let script = """
            import sys, pyrage
            mode, key, src, dst = sys.argv[1:5]
            data = open(src, 'rb').read()
            if mode == 'e':
                out = pyrage.encrypt(data, [pyrage.ssh.Recipient.from_str(open(key).read().strip())])
            else:
                out = pyrage.decrypt(data, [pyrage.ssh.Identity.from_buffer(open(key, 'rb').read())])
            open(dst, 'wb').write(out)
            """
        let pyEncrypt = try TestSupport.run(python, ["-c", script, "e", path("id.pub"), path("plain"), path("py.age")])
        try #require(pyEncrypt.status == 0, "\(pyEncrypt.stderrText)")
        let sfDecrypt = try TestSupport.run(sf, ["decrypt", "-i", path("id"), path("py.age")])
        #expect(sfDecrypt.status == 0 && sfDecrypt.stdout == plaintext, "\(sfDecrypt.stderrText)")
        let sfEncrypt = try TestSupport.run(sf, ["encrypt", "-R", path("id.pub"), "-o", path("sf.age"), path("plain")])
        try #require(sfEncrypt.status == 0, "\(sfEncrypt.stderrText)")
        let pyDecrypt = try TestSupport.run(python, ["-c", script, "d", path("id"), path("sf.age"), path("out")])
        #expect(pyDecrypt.status == 0, "\(pyDecrypt.stderrText)")
        #expect(try Data(contentsOf: dir.appendingPathComponent("out")) == plaintext)
    }
}
