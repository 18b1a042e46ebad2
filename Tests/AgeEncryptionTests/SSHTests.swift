import AgeEncryption
import Crypto
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// ssh-ed25519 recipients and identities from OpenSSH key files, against the age CLI (ssh-rsa:
/// SSHRSATests).
@Suite(.serialized) struct SSHTests {
    /// A fresh unencrypted OpenSSH key pair of `type` in a temporary directory.
    static func keyPair(_ type: String) throws -> (URL, private: String, public: String) {
        let keygen = try PeerTests.require(.sshKeygen)
        let dir = try TestSupport.temporaryDirectory("age-ssh")
        let key = dir.appendingPathComponent("id").path
        let result = try TestSupport.run(keygen, ["-q", "-t", type, "-N", "", "-C", "test key", "-f", key])
        try #require(result.status == 0, "\(result.stderrText)")
        return (dir, try String(contentsOfFile: key, encoding: .utf8), try String(contentsOfFile: key + ".pub", encoding: .utf8))
    }

    // Live peer: ssh-keygen makes the keys.
    @Test(.requires(.sshKeygen))
    func ed25519RoundTripInProcess() throws {
        let (dir, privateKey, publicKey) = try Self.keyPair("ed25519")
        defer { try? FileManager.default.removeItem(at: dir) }
        let recipient = try Age.parseRecipient(publicKey)
        let identities = try Age.parseIdentities(privateKey)
        for size in [0, 1, 64 * 1024 + 1] {
            let plaintext = SecureRandom.bytes(count: size)
            let file = try Age.encrypt(plaintext, to: [recipient])
            #expect(try Age.decrypt(file, identities: identities) == plaintext)
        }
        // Another SSH key does not match (its tag differs).
        let (otherDir, otherKey, _) = try Self.keyPair("ed25519")
        defer { try? FileManager.default.removeItem(at: otherDir) }
        let file = try Age.encrypt(Data("x".utf8), to: [recipient])
        #expect(throws: AgeError.noIdentityMatched) { try Age.decrypt(file, identities: Age.parseIdentities(otherKey)) }
    }

    /// age checks the share of every ssh-ed25519 stanza, addressed to this key or not, before its
    /// tag (agessh's Ed25519Identity.unwrap). A header with another key's stanza whose share is not
    /// 32 bytes of canonical base64, then a genuine stanza, is refused by age and by us alike.
    // Live peers: ssh-keygen makes the key, the reference age reads the files.
    @Test(.requires(.sshKeygen, .age))
    func everySSHEd25519StanzasShareIsChecked() throws {
        let age = try PeerTests.require(.age)
        let (dir, privateKey, publicKey) = try Self.keyPair("ed25519")
        defer { try? FileManager.default.removeItem(at: dir) }
        let identities = try Age.parseIdentities(privateKey)
        let recipient = try Age.parseRecipient(publicKey)
        let path = dir.appendingPathComponent("file.age")
        let unpadded = { (bytes: Data) in bytes.base64EncodedString().replacingOccurrences(of: "=", with: "") }
        for share in ["!!!", "AAAA", unpadded(Data(count: 31)), unpadded(Data(count: 33))] {
            let other = WritableHeaderTests.FixedStanzaRecipient(arguments: ["ssh-ed25519", "AAAAAA", share])
            let file = try Age.encrypt(Data("x".utf8), to: [other, recipient])
            #expect(throws: AgeError.malformedHeader("an ssh-ed25519 share is not canonical base64 of 32 bytes"), "\(share)") {
                try Age.decrypt(file, identities: identities)
            }
            try file.write(to: path)
            let byAge = try TestSupport.run(age, ["-d", "-i", dir.appendingPathComponent("id").path, path.path])
            #expect(byAge.status != 0, "age opened a header with the share \(share)")
        }
        // A well-formed share of another key's stanza is passed over, by both.
        let other = WritableHeaderTests.FixedStanzaRecipient(arguments: ["ssh-ed25519", "AAAAAA", unpadded(Data(repeating: 9, count: 32))])
        let file = try Age.encrypt(Data("x".utf8), to: [other, recipient])
        #expect(try Age.decrypt(file, identities: identities) == Data("x".utf8))
        try file.write(to: path)
        let byAge = try TestSupport.run(age, ["-d", "-i", dir.appendingPathComponent("id").path, path.path])
        #expect(byAge.status == 0 && byAge.stdout == Data("x".utf8), "\(byAge.stderrText)")
    }

    // Live peers: ssh-keygen makes the keys, the reference age reads and writes the files.
    @Test(.requires(.sshKeygen, .age), arguments: [0, 1, 64 * 1024, 64 * 1024 + 1], [false, true])
    func ed25519WithAge(size: Int, armored: Bool) throws {
        let age = try PeerTests.require(.age), sf = try PeerTests.sf()
        let (dir, _, _) = try Self.keyPair("ed25519")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let plaintext = SecureRandom.bytes(count: size)
        try plaintext.write(to: dir.appendingPathComponent("plain"))
        let armor = armored ? ["-a"] : []

        let byAge = try TestSupport.run(age, ["-R", path("id.pub")] + armor + ["-o", path("age.age"), path("plain")])
        #expect(byAge.status == 0, "\(byAge.stderrText)")
        let sfOpens = try TestSupport.run(sf, ["decrypt", "-i", path("id"), path("age.age")])
        #expect(sfOpens.status == 0, "\(sfOpens.stderrText)")
        #expect(sfOpens.stdout == plaintext)

        let bySf = try TestSupport.run(sf, ["encrypt", "-R", path("id.pub")] + armor + ["-o", path("sf.age"), path("plain")])
        #expect(bySf.status == 0, "\(bySf.stderrText)")
        let ageOpens = try TestSupport.run(age, ["-d", "-i", path("id"), path("sf.age")])
        #expect(ageOpens.status == 0, "\(ageOpens.stderrText)")
        #expect(ageOpens.stdout == plaintext)
    }

    @Test func malformedKeysAreRejected() {
        #expect(throws: AgeError.sshKey(.truncated)) { try Age.parseRecipient("ssh-ed25519 AAAA") }
        #expect(throws: AgeError.sshKey(.truncated)) { try Age.parseRecipient("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA== x") }
        #expect(throws: AgeError.openSSHKeyFile(.malformed("truncated SSH encoding"))) {
            try Age.parseIdentities("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n")
        }
    }

    /// An ssh-ed25519 line (labelled `label`) whose key is the 32-byte little-endian `y` with the sign bit `sign`.
    static func ed25519Line(y: [UInt64], sign: UInt8 = 0, label: String = "ssh-ed25519") -> String {
        TestSupport.sshEd25519Line(TestSupport.ed25519Encoding(y: y, sign: sign), label: label)
    }

    static let p = TestSupport.ed25519Prime
    /// Encodings that are not Ed25519 points (RFC 8032 §5.1.3): y = 2 (no x), y = p + 3 (y = 3 is a
    /// point, but not canonically encoded), y = p − 1 with the sign bit (x = 0).
    static let invalidPoints: [(line: String, defect: SSHPublicKeyError.Ed25519PointDefect)] = [
        (ed25519Line(y: [2, 0, 0, 0]), .notOnCurve),
        (ed25519Line(y: [p[0] + 3, p[1], p[2], p[3]]), .nonCanonicalY),
        (ed25519Line(y: [p[0] - 1, p[1], p[2], p[3]], sign: 1), .signedZeroX),
    ]

    @Test func ed25519KeysThatAreNotPointsAreRefused() throws {
        for (line, defect) in Self.invalidPoints {
            let expected = AgeError.sshKey(.invalidEd25519Point(defect))
            #expect(throws: expected) { try Age.parseRecipient(line) }
            #expect(throws: expected) { try Age.SSHEd25519Recipient(line) }
            #expect(throws: AgeError.sshKey(.invalidEd25519Point(defect), line: 2)) {
                try Age.parseRecipients(Self.ed25519Line(y: [3, 0, 0, 0]) + "\n" + line + "\n")
            }
            // What a person reads names the line and the defect, nothing internal.
            #expect(AgeError.sshKey(.invalidEd25519Point(defect), line: 2).description
                == "invalid OpenSSH key: line 2: \(SSHPublicKeyError.invalidEd25519Point(defect).description)")
        }
        // y = 3 is a point: accepted.
        #expect(try Age.parseRecipient(Self.ed25519Line(y: [3, 0, 0, 0])) is Age.SSHEd25519Recipient)
    }

    /// The wire encoding of a 2048-bit ssh-rsa public key with e = 65537.
    static let rsaBlob = "AAAAB3NzaC1yc2EAAAADAQABAAABAQC+d9GjRdXDta72xIm0UzVQXBwJWi+f4z6oBqfL0oylAK6nb6miHnQYnfTVOIs0gGFrUrSx5b6jXecKG8E7lpog4SW+2I2xd+gNk3qRInVMJZNUtEBUZAK2ZPomzqeulkC3vVRBG7NnnYWQu1ZEfvRllNwDKLXF+4G24hXReURjy7at1GpXij26UY+6PkMjcso9JXshjdIa2IJ2q+QFQ3MxlhYka7sNFpc6bMvbmrSUydqETuGn5X+5iyyzXtM7KjYDrwPUS7KWIPC670nFCp34badZvx2xSybLRHXzC1E4Pj7jLgwEAHkQuFUuZW8fWnJbX6HFpmg9xFz6koTinBWP"

    /// The key type comes from the blob, as in age (x/crypto/ssh `ParseAuthorizedKey`): an RSA blob
    /// under an ssh-ed25519 label is an ssh-rsa recipient, an ECDSA blob under another label is
    /// an invalid recipient (age 1.1.1: "malformed recipient" in a recipients file), and a key of an
    /// unsupported type under its own label is skipped in a recipients file (age warns and skips too).
    @Test func unsupportedBlobsFollowAge() throws {
        let ecdsaBlob = "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBATw50PJ04l1ZJ+7Cxzomi1xNM2XIG2Gsw5raQmzVwDzTY1fv1FU2rrVx0RXURFxuSGa46V9nSZw1Hne29Xmwsg="
        let good = Self.ed25519Line(y: [3, 0, 0, 0])
        let unsupported = { (line: String) -> Bool in
            do { _ = try Age.parseRecipient(line) } catch AgeError.unsupportedKeyType { return true } catch {}
            return false
        }
        #expect(try Age.parseRecipient("ssh-ed25519 \(Self.rsaBlob) key") is Age.SSHRSARecipient)
        #expect(unsupported("ssh-dss AAAAB3NzaC1kc3M="))
        #expect(throws: AgeError.sshKey(.unsupportedKeyType("ecdsa-sha2-nistp256"))) {
            try Age.parseRecipient("ssh-ed25519 \(ecdsaBlob)")
        }
        var skipped = [Age.SkippedKey]()
        #expect(try Age.parseRecipients("ssh-dss AAAAB3NzaC1kc3M=\n\(good)\n", skippingUnsupported: &skipped).count == 1)
        #expect(skipped.map(\.line) == [1])
        #expect(throws: AgeError.sshKey(.unsupportedKeyType("ecdsa-sha2-nistp256"), line: 1)) {
            try Age.parseRecipients("ssh-rsa \(ecdsaBlob)\n\(good)\n")
        }
        skipped = []
        #expect(try Age.parseRecipients("ecdsa-sha2-nistp256 \(ecdsaBlob) c\n\(good)\n", skippingUnsupported: &skipped).count == 1)
        #expect(skipped.map(\.line) == [1])
        #expect(unsupported("ecdsa-sha2-nistp256 \(ecdsaBlob)"))
    }

    // Live peers: ssh-keygen makes the keys, the reference age reads the recipients file. Both skip
    // the ECDSA key (age: "ignoring unsupported SSH key"), encrypt to the Ed25519 one, and refuse
    // the file when the ECDSA key is alone.
    @Test(.requires(.sshKeygen, .age))
    func recipientsFileSkipsAnECDSAKeyAsAgeDoes() throws {
        let age = try PeerTests.require(.age), sf = try PeerTests.sf()
        let (dir, _, ed25519) = try Self.keyPair("ed25519")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (ecdsaDir, _, ecdsa) = try Self.keyPair("ecdsa")
        defer { try? FileManager.default.removeItem(at: ecdsaDir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        try (ecdsa + ed25519).write(toFile: path("both.pub"), atomically: true, encoding: .utf8)
        try ecdsa.write(toFile: path("ecdsa.pub"), atomically: true, encoding: .utf8)
        for tool in [age, sf] {
            let arguments = tool == sf ? ["encrypt"] : []
            let both = try TestSupport.run(tool, arguments + ["-R", path("both.pub"), "-o", path("out.age")], stdin: Data("x".utf8))
            #expect(both.status == 0, "\(tool): \(both.stderrText)")
            let opened = try TestSupport.run(age, ["-d", "-i", path("id"), path("out.age")])
            #expect(opened.status == 0 && opened.stdout == Data("x".utf8), "\(tool): \(opened.stderrText)")
            let alone = try TestSupport.run(tool, arguments + ["-R", path("ecdsa.pub")], stdin: Data("x".utf8))
            #expect(alone.status != 0 && alone.stdout.isEmpty, "\(tool)")
        }
    }

    // Live peers: ssh-keygen makes the key, the reference age reads and writes the files. age 1.1.1
    // ignores the line's first field (x/crypto/ssh ParseAuthorizedKey); so does sf.
    @Test(.requires(.sshKeygen, .age), arguments: ["ssh-rsa", "ssh-dss", "ssh-x"])
    func keyTypeComesFromTheBlobAsInAge(label: String) throws {
        let age = try PeerTests.require(.age), sf = try PeerTests.sf()
        let (dir, _, publicKey) = try Self.keyPair("ed25519")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let line = "\(label) \(publicKey.split(separator: " ")[1]) test key"
        #expect(try Age.parseRecipient(line) is Age.SSHEd25519Recipient)
        let plaintext = SecureRandom.bytes(count: 1000)
        try plaintext.write(to: dir.appendingPathComponent("plain"))

        let byAge = try TestSupport.run(age, ["-r", line, "-o", path("age.age"), path("plain")])
        #expect(byAge.status == 0, "\(byAge.stderrText)")
        let sfOpens = try TestSupport.run(sf, ["decrypt", "-i", path("id"), path("age.age")])
        #expect(sfOpens.status == 0 && sfOpens.stdout == plaintext, "\(sfOpens.stderrText)")

        let bySf = try TestSupport.run(sf, ["encrypt", "-r", line, "-o", path("sf.age"), path("plain")])
        #expect(bySf.status == 0, "\(bySf.stderrText)")
        let ageOpens = try TestSupport.run(age, ["-d", "-i", path("id"), path("sf.age")])
        #expect(ageOpens.status == 0 && ageOpens.stdout == plaintext, "\(ageOpens.stderrText)")
    }

    // Live peer: the reference age refuses the encodings that are not points too (y = 2: "invalid
    // point encoding"; x = 0 with the sign bit: the low-order point y = -1, refused when wrapping).
    // age 1.1.1 ACCEPTS the non-canonical y = p + 3 (filippo.io/edwards25519 SetBytes reduces y);
    // sf refuses it, as RFC 8032 §5.1.3 decoding requires. No real key is encoded that way.
    @Test(.requires(.age))
    func invalidPointsAreRefusedByAgeAndSf() throws {
        let age = try PeerTests.require(.age), sf = try PeerTests.sf()
        for (line, defect) in Self.invalidPoints {
            let bySf = try TestSupport.run(sf, ["encrypt", "-r", line], stdin: Data("x".utf8))
            #expect(bySf.status != 0 && bySf.stdout.isEmpty, "\(line)")
            #expect(bySf.stderrText.contains(SSHPublicKeyError.invalidEd25519Point(defect).description), "\(bySf.stderrText)")
            guard defect != .nonCanonicalY else { continue }
            let byAge = try TestSupport.run(age, ["-r", line], stdin: Data("x".utf8))
            #expect(byAge.status != 0 && byAge.stdout.isEmpty, "age accepted \(line)")
        }
    }

    /// An unencrypted `openssh-key-v1` file (OpenSSH PROTOCOL.key) holding the ssh-ed25519 `seed`
    /// with `publicKey` in all three places the format holds it (the public blob, and twice in the
    /// private section), written field by field, independently of the reader under test.
    static func ed25519KeyFile(
        seed: Data, publicKey: Data, kdfOptions: Data = Data(), pad: (inout Data) -> Void = Self.standardPadding, trailer: Data = Data()
    ) -> String {
        var blob = SSHWireWriter()
        blob.string("ssh-ed25519")
        blob.string(publicKey)
        var secret = SSHWireWriter()
        secret.uint32(0x5eed_cafe)
        secret.uint32(0x5eed_cafe)
        secret.string("ssh-ed25519")
        secret.string(publicKey)
        secret.string(seed + publicKey)
        secret.string("fixture")
        var section = secret.bytes
        pad(&section)
        var file = SSHWireWriter()
        file.string("none")  // cipher
        file.string("none")  // KDF
        file.string(kdfOptions)
        file.uint32(1)
        file.string(blob.bytes)
        file.string(section)
        let body = Data("openssh-key-v1\0".utf8) + file.bytes + trailer
        return "-----BEGIN OPENSSH PRIVATE KEY-----\n\(body.base64EncodedString())\n-----END OPENSSH PRIVATE KEY-----\n"
    }

    /// Padding 1, 2, 3, … to the cipher's block size (8 for "none"), as ssh-keygen writes it.
    static func standardPadding(_ section: inout Data) {
        var pad: UInt8 = 1
        while section.count % 8 != 0 {
            section.append(pad)
            pad += 1
        }
    }

    /// An OpenSSH key file is taken only as ssh-keygen writes it: no KDF options without a KDF,
    /// nothing after the private section, and the private section padded 1, 2, 3, … to 8 bytes.
    /// Bytes there would be read by nobody (and two files differing only there would be one key).
    @Test func openSSHKeyFilesCarryNothingBesidesTheKey() throws {
        let key = Curve25519.Signing.PrivateKey()
        let (seed, publicKey) = (key.rawRepresentation, key.publicKey.rawRepresentation)
        _ = try Age.parseIdentities(Self.ed25519KeyFile(seed: seed, publicKey: publicKey))
        let refused: [(String, String)] = [
            (Self.ed25519KeyFile(seed: seed, publicKey: publicKey, kdfOptions: Data([0])), "KDF options without a KDF"),
            (Self.ed25519KeyFile(seed: seed, publicKey: publicKey, trailer: Data([0, 0, 0, 0])), "data after the private section"),
            (Self.ed25519KeyFile(seed: seed, publicKey: publicKey, pad: { section in
                Self.standardPadding(&section)
                section.append(contentsOf: 1...8)  // a whole block more
            }), "the private section's padding is not 1, 2, 3, … to 8 bytes"),
            (Self.ed25519KeyFile(seed: seed, publicKey: publicKey, pad: { section in
                Self.standardPadding(&section)
                if section.last.map({ $0 > 1 }) == true { section[section.count - 1] = 0 } else { section.append(contentsOf: [0, 1, 2, 3, 4, 5, 6, 7]) }
            }), "the private section's padding is not 1, 2, 3, … to 8 bytes"),
        ]
        for (file, reason) in refused {
            #expect(throws: AgeError.openSSHKeyFile(.malformed(reason))) { try Age.parseIdentities(file) }
        }
    }

    /// The seed must be the private key of the file's public key: a file whose three copies of the
    /// public key all name another key is refused (SecureKeys' reader refuses it too). It would
    /// answer to the other key's tag without being able to open its files.
    @Test func anEd25519SeedOfAnotherKeyIsRefused() throws {
        let key = Curve25519.Signing.PrivateKey(), other = Curve25519.Signing.PrivateKey()
        let publicKey = key.publicKey.rawRepresentation
        // The fixture is well formed: with its own public key, the identity opens a file to that key.
        let identities = try Age.parseIdentities(Self.ed25519KeyFile(seed: key.rawRepresentation, publicKey: publicKey))
        let file = try Age.encrypt(Data("x".utf8), to: [try Age.parseRecipient(TestSupport.sshEd25519Line(publicKey))])
        #expect(try Age.decrypt(file, identities: identities) == Data("x".utf8))
        #expect(throws: AgeError.invalidIdentity("the ssh-ed25519 private key does not match the file's public key")) {
            try Age.parseIdentities(Self.ed25519KeyFile(seed: key.rawRepresentation, publicKey: other.publicKey.rawRepresentation))
        }
    }
}
