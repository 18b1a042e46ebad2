import AgeEncryption
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// `sf encrypt` / `sf decrypt` / `sf keygen` exit statuses and error messages.
@Suite struct CLITests {
    static func sf(_ arguments: [String], stdin: Data = Data()) throws -> ProcessResult {
        let binary = try #require(TestSupport.sfBinary, "the sf binary was not built alongside the tests")
        return try TestSupport.run(binary.path, arguments, stdin: stdin)
    }

    @Test func clearErrorsAndExitStatuses() throws {
        let dir = try TestSupport.temporaryDirectory("age-cli")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let identity = Age.X25519Identity()
        try Data((identity.secretString + "\n").utf8).write(to: dir.appendingPathComponent("key"))
        try Data((Age.X25519Identity().secretString + "\n").utf8).write(to: dir.appendingPathComponent("other"))
        let file = try Age.encrypt(SecureRandom.bytes(count: 70_000), to: [identity.recipient])

        let wrong = try Self.sf(["decrypt", "-i", path("other")], stdin: file)
        #expect(wrong.status == 1)
        #expect(wrong.stderrText.contains("no identity matched"))
        #expect(wrong.stdout.isEmpty)

        let truncated = try Self.sf(["decrypt", "-i", path("key"), "-o", path("out")], stdin: file.prefix(file.count - 10))
        #expect(truncated.status == 1)
        #expect(!FileManager.default.fileExists(atPath: path("out")), "no partial output file")

        let chunkBoundary = file.count - (70_000 - 65_536 + 16)
        let cut = try Self.sf(["decrypt", "-i", path("key")], stdin: file.prefix(chunkBoundary))
        #expect(cut.status == 1)
        #expect(cut.stderrText.contains("file truncated"))

        var badMAC = file
        let mac = badMAC.firstRange(of: Data("\n--- ".utf8))!.upperBound
        badMAC[mac] = badMAC[mac] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let mismatch = try Self.sf(["decrypt", "-i", path("key")], stdin: badMAC)
        #expect(mismatch.status == 1)
        #expect(mismatch.stderrText.contains("header MAC mismatch"))

        let usage = try Self.sf(["encrypt"], stdin: Data("x".utf8))
        #expect(usage.status == 2)
        #expect(usage.stdout.isEmpty)
    }

    @Test func workFactorCeiling() throws {
        let dir = try TestSupport.temporaryDirectory("age-cli")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pass = dir.appendingPathComponent("pass").path
        try Data("pw\n".utf8).write(to: URL(fileURLWithPath: pass))
        // A hand-made header announcing work factor 30: refused before any scrypt work.
        let stanza = Age.Stanza(arguments: ["scrypt", "AAAAAAAAAAAAAAAAAAAAAA", "30"], body: Data(count: 32))
        let header = "age-encryption.org/v1\n-> \(stanza.arguments.joined(separator: " "))\n"
            + Data(count: 32).base64EncodedString().replacingOccurrences(of: "=", with: "") + "\n--- "
            + String(repeating: "A", count: 43) + "\n"
        let result = try Self.sf(["decrypt", "--passphrase-file", pass], stdin: Data(header.utf8))
        #expect(result.status == 1)
        #expect(result.stderrText.contains("work factor 30 above ceiling 22"))
    }

    @Test func passphraseFileRoundTripAndArmorToStdout() throws {
        let dir = try TestSupport.temporaryDirectory("age-cli")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pass = dir.appendingPathComponent("pass").path
        try Data("a passphrase\n".utf8).write(to: URL(fileURLWithPath: pass))
        let encrypted = try Self.sf(["encrypt", "--passphrase-file", pass, "--work-factor", "12", "-a"], stdin: Data("hello".utf8))
        #expect(encrypted.status == 0)
        #expect(encrypted.stdoutText.hasPrefix("-----BEGIN AGE ENCRYPTED FILE-----\n"))
        let decrypted = try Self.sf(["decrypt", "--passphrase-file", pass], stdin: encrypted.stdout)
        #expect(decrypted.stdoutText == "hello")
        let ageStyle = try Self.sf(["encrypt", "-d", "--passphrase-file", pass], stdin: encrypted.stdout)
        #expect(ageStyle.stdoutText == "hello")
    }
}
