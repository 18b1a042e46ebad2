import AgeEncryption
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// Issue 9: an unsupported ssh-rsa key does not sink the whole command, and `sf keygen --pq`.
@Suite struct KeyChoiceCLITests {
    static func sf(_ arguments: [String], stdin: Data = Data()) throws -> ProcessResult { try CLITests.sf(arguments, stdin: stdin) }

    /// A directory with an ssh-rsa key pair (id_rsa, id_rsa.pub) and an age identity (age.key).
    static func workspace() throws -> URL {
        let keygen = try TestSupport.path(of: .sshKeygen)
        let dir = try TestSupport.temporaryDirectory("age-rsa-skip")
        let rsa = dir.appendingPathComponent("id_rsa").path
        #expect(try TestSupport.run(keygen, ["-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", rsa]).status == 0)
        #expect(try sf(["keygen", "-o", dir.appendingPathComponent("age.key").path]).status == 0)
        return dir
    }

    // Live peer: ssh-keygen makes the ssh-rsa key.
    @Test(.requires(.sshKeygen)) func rsaIdentityIsSkippedWhenAnotherMatches() throws {
        let dir = try Self.workspace()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let encrypted = try Self.sf(["encrypt", "-i", path("age.key"), "-a"], stdin: Data("both".utf8))
        try #require(encrypted.status == 0, "\(encrypted.stderrText)")
        for order in [[path("id_rsa"), path("age.key")], [path("age.key"), path("id_rsa")]] {
            let decrypted = try Self.sf(["decrypt"] + order.flatMap { ["-i", $0] }, stdin: encrypted.stdout)
            #expect(decrypted.status == 0 && decrypted.stdoutText == "both", "\(decrypted.stderrText)")
            #expect(decrypted.stderrText.contains("warning: skipping identity file \(path("id_rsa"))"))
            #expect(decrypted.stderrText.contains("ssh-rsa"))
        }
        // Alone, the ssh-rsa identity is an error that says why (and no passphrase prompt).
        let alone = try Self.sf(["decrypt", "-i", path("id_rsa")], stdin: encrypted.stdout)
        #expect(alone.status == 1 && alone.stdout.isEmpty && alone.stderrText.contains("ssh-rsa"))
    }

    // Live peer: ssh-keygen makes the ssh-rsa key.
    @Test(.requires(.sshKeygen)) func rsaRecipientLineIsSkippedWithItsLineNumber() throws {
        let dir = try Self.workspace()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let ageRecipient = try Self.sf(["keygen", "-y", path("age.key")]).stdoutText
        let rsaLine = try String(contentsOfFile: path("id_rsa.pub"), encoding: .utf8)
        let recipients = "# team\n" + rsaLine + ageRecipient
        try Data(recipients.utf8).write(to: dir.appendingPathComponent("recipients"))
        let encrypted = try Self.sf(["encrypt", "-R", path("recipients"), "-a"], stdin: Data("skip".utf8))
        #expect(encrypted.status == 0, "\(encrypted.stderrText)")
        #expect(encrypted.stderrText.contains("warning: skipping \(path("recipients")) line 2: ssh-rsa"))
        let decrypted = try Self.sf(["decrypt", "-i", path("age.key")], stdin: encrypted.stdout)
        #expect(decrypted.stdoutText == "skip")

        // Only ssh-rsa lines: an error naming the line; a malformed line is still an error.
        try Data(("# only\n" + rsaLine).utf8).write(to: dir.appendingPathComponent("only-rsa"))
        let onlyRSA = try Self.sf(["encrypt", "-R", path("only-rsa")], stdin: Data("x".utf8))
        #expect(onlyRSA.status == 1 && onlyRSA.stdout.isEmpty && onlyRSA.stderrText.contains("line 2"))
        try Data((ageRecipient + "age1notarecipient\n").utf8).write(to: dir.appendingPathComponent("bad"))
        let bad = try Self.sf(["encrypt", "-R", path("bad")], stdin: Data("x".utf8))
        #expect(bad.status == 1 && bad.stderrText.contains("line 2"))
    }

    @Test func recipientsParserSkipsOnlyUnsupportedTypes() throws {
        let x25519 = Age.X25519Identity().recipient.string
        // A syntactically valid ssh-rsa public key line (e = 65537, a 2048-bit modulus).
        var blob = Data()
        func put(_ bytes: Data) {
            withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { blob.append(contentsOf: $0) }
            blob.append(bytes)
        }
        put(Data("ssh-rsa".utf8)); put(Data([1, 0, 1])); put(Data([0]) + Data(repeating: 0xC5, count: 256))
        let rsa = "ssh-rsa \(blob.base64EncodedString()) someone"
        var skipped = [Age.SkippedKey]()
        let parsed = try Age.parseRecipients("\(rsa)\n\(x25519)\n", skippingUnsupported: &skipped)
        #expect(parsed.count == 1 && skipped.map(\.line) == [1])
        #expect(throws: AgeError.self) { try Age.parseRecipients("\(rsa)\n\(x25519)\n") }
    }

    @Test func helpNoLongerOffersSSHRSA() throws {
        let help = try Self.sf(["help", "encrypt"])
        #expect(help.status == 0 && !help.stdoutText.contains("ssh-rsa") && help.stdoutText.contains("age1pq1"))
    }

    @Test func keygenPostQuantumIdentity() throws {
        let dir = try TestSupport.temporaryDirectory("age-pq")
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = dir.appendingPathComponent("pq.key").path
        let made = try Self.sf(["keygen", "--pq", "-o", key])
        #expect(made.status == 0 && made.stderrText.hasPrefix("Public key: age1pq1"), "\(made.stderrText)")
        let text = try String(contentsOfFile: key, encoding: .utf8)
        let lines = text.split(separator: "\n")
        // The layout of age-keygen -pq: created, public key comment, AGE-SECRET-KEY-PQ-1… line.
        #expect(lines.count == 3 && lines[0].hasPrefix("# created: ") && lines[1].hasPrefix("# public key: age1pq1"))
        #expect(lines[2].hasPrefix("AGE-SECRET-KEY-PQ-1") && lines[2] == lines[2].uppercased())
        let attributes = try FileManager.default.attributesOfItem(atPath: key)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // -y prints the same recipient as the comment; files encrypted to it decrypt with it.
        let recipient = try Self.sf(["keygen", "-y", key]).stdoutText
        #expect(recipient == lines[1].dropFirst("# public key: ".count) + "\n")
        let encrypted = try Self.sf(["encrypt", "-r", recipient.trimmingCharacters(in: .newlines), "-a"], stdin: Data("pq".utf8))
        #expect(encrypted.status == 0 && encrypted.stdoutText.contains("-----BEGIN AGE ENCRYPTED FILE-----"))
        #expect(try Age.decrypt(encrypted.stdout, identities: Age.parseIdentities(text)) == Data("pq".utf8))
        #expect(try Self.sf(["keygen", "--pq", "-y", key]).status == 2)
    }
}
