import AgeEncryption
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// Issue 9: a key of an unsupported type (an ECDSA SSH key; ssh-rsa is supported since issue 20)
/// does not sink the whole command, and `sf keygen --pq`.
@Suite struct KeyChoiceCLITests {
    static func sf(_ arguments: [String], stdin: Data = Data()) throws -> ProcessResult { try CLITests.sf(arguments, stdin: stdin) }

    /// A directory with an ECDSA SSH key pair (id_ecdsa, id_ecdsa.pub) and an age identity (age.key).
    static func workspace() throws -> URL {
        let keygen = try TestSupport.path(of: .sshKeygen)
        let dir = try TestSupport.temporaryDirectory("age-ecdsa-skip")
        let ecdsa = dir.appendingPathComponent("id_ecdsa").path
        #expect(try TestSupport.run(keygen, ["-q", "-t", "ecdsa", "-N", "", "-f", ecdsa]).status == 0)
        #expect(try sf(["keygen", "-o", dir.appendingPathComponent("age.key").path]).status == 0)
        return dir
    }

    // Live peer: ssh-keygen makes the ECDSA key.
    @Test(.requires(.sshKeygen)) func unsupportedIdentityIsSkippedWhenAnotherMatches() throws {
        let dir = try Self.workspace()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let encrypted = try Self.sf(["encrypt", "-i", path("age.key"), "-a"], stdin: Data("both".utf8))
        try #require(encrypted.status == 0, "\(encrypted.stderrText)")
        for order in [[path("id_ecdsa"), path("age.key")], [path("age.key"), path("id_ecdsa")]] {
            let decrypted = try Self.sf(["decrypt"] + order.flatMap { ["-i", $0] }, stdin: encrypted.stdout)
            #expect(decrypted.status == 0 && decrypted.stdoutText == "both", "\(decrypted.stderrText)")
            #expect(decrypted.stderrText.contains("warning: skipping identity file \(path("id_ecdsa"))"))
            #expect(decrypted.stderrText.contains("ecdsa-sha2-nistp256"))
        }
        // Alone, the ECDSA identity is an error that says why (and no passphrase prompt).
        let alone = try Self.sf(["decrypt", "-i", path("id_ecdsa")], stdin: encrypted.stdout)
        #expect(alone.status == 1 && alone.stdout.isEmpty && alone.stderrText.contains("ecdsa-sha2-nistp256"))
    }

    // Live peer: ssh-keygen makes the ECDSA key.
    @Test(.requires(.sshKeygen)) func unsupportedRecipientLineIsSkippedWithItsLineNumber() throws {
        let dir = try Self.workspace()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let ageRecipient = try Self.sf(["keygen", "-y", path("age.key")]).stdoutText
        let ecdsaLine = try String(contentsOfFile: path("id_ecdsa.pub"), encoding: .utf8)
        let recipients = "# team\n" + ecdsaLine + ageRecipient
        try Data(recipients.utf8).write(to: dir.appendingPathComponent("recipients"))
        let encrypted = try Self.sf(["encrypt", "-R", path("recipients"), "-a"], stdin: Data("skip".utf8))
        #expect(encrypted.status == 0, "\(encrypted.stderrText)")
        #expect(encrypted.stderrText.contains("warning: skipping \(path("recipients")) line 2: unsupported SSH key type \"ecdsa-sha2-nistp256\""),
                "\(encrypted.stderrText)")
        let decrypted = try Self.sf(["decrypt", "-i", path("age.key")], stdin: encrypted.stdout)
        #expect(decrypted.stdoutText == "skip")

        // Only unsupported lines: an error naming the line; a malformed line is still an error.
        try Data(("# only\n" + ecdsaLine).utf8).write(to: dir.appendingPathComponent("only-ecdsa"))
        let onlyECDSA = try Self.sf(["encrypt", "-R", path("only-ecdsa")], stdin: Data("x".utf8))
        #expect(onlyECDSA.status == 1 && onlyECDSA.stdout.isEmpty && onlyECDSA.stderrText.contains("line 2"))
        try Data((ageRecipient + "age1notarecipient\n").utf8).write(to: dir.appendingPathComponent("bad"))
        let bad = try Self.sf(["encrypt", "-R", path("bad")], stdin: Data("x".utf8))
        #expect(bad.status == 1 && bad.stderrText.contains("line 2"))
    }

    @Test func recipientsParserSkipsOnlyUnsupportedTypes() throws {
        let x25519 = Age.X25519Identity().recipient.string
        let ecdsa = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBATw50PJ04l1ZJ+7Cxzomi1xNM2XIG2Gsw5raQmzVwDzTY1fv1FU2rrVx0RXURFxuSGa46V9nSZw1Hne29Xmwsg= someone"
        var skipped = [Age.SkippedKey]()
        let parsed = try Age.parseRecipients("\(ecdsa)\n\(x25519)\n", skippingUnsupported: &skipped)
        #expect(parsed.count == 1 && skipped.map(\.line) == [1])
        #expect(throws: AgeError.self) { try Age.parseRecipients("\(ecdsa)\n\(x25519)\n") }
    }

    @Test func helpOffersSSHRSA() throws {
        let help = try Self.sf(["help", "encrypt"])
        #expect(help.status == 0 && help.stdoutText.contains("ssh-rsa") && help.stdoutText.contains("age1pq1"))
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
