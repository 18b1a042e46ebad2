import AgeEncryption
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// ssh-ed25519 recipients and identities from OpenSSH key files, against the age CLI; ssh-rsa is
/// refused with a clear error (swift-crypto has no RSA-OAEP with a label).
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

    // Live peer: ssh-keygen makes the keys.
    @Test(.requires(.sshKeygen))
    func rsaIsRefusedClearly() throws {
        let (dir, privateKey, publicKey) = try Self.keyPair("rsa")
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(throws: AgeError.self) { try Age.parseRecipient(publicKey) }
        #expect(throws: AgeError.self) { try Age.parseIdentities(privateKey) }
    }

    @Test func malformedKeysAreRejected() {
        #expect(throws: AgeError.self) { try Age.parseRecipient("ssh-ed25519 AAAA") }
        #expect(throws: AgeError.self) { try Age.parseRecipient("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA== x") }
        #expect(throws: AgeError.self) {
            try Age.parseIdentities("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n")
        }
    }
}
