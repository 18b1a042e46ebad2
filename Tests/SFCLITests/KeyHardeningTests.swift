import Foundation
import SFTestSupport
import SecureFoundation
import Testing

/// Issue 12 items 12 and 13, through the built `sf` binary.
@Suite struct KeyHardeningTests {
    /// Item 12: `sf key generate` never replaces an existing key file (or a planted link) unless --force.
    @Test func generateRefusesToOverwriteWithoutForce() throws {
        let scratch = try Scratch()
        let privatePath = scratch.path("id.pem"), publicPath = scratch.path("id.pub")
        #expect(try sf(["key", "generate", "--type", "p256", "--out", privatePath, "--public-out", publicPath]).status == 0)
        let originalPrivate = try scratch.read("id.pem"), originalPublic = try scratch.read("id.pub")

        var result = try sf(["key", "generate", "--type", "p256", "--out", privatePath])
        #expect(result.status == 1 && result.stderrText.contains("--force"))
        result = try sf(["key", "generate", "--type", "p256", "--out", scratch.path("new.pem"), "--public-out", publicPath])
        #expect(result.status == 1)
        #expect(!FileManager.default.fileExists(atPath: scratch.path("new.pem")), "nothing is written when an output exists")
        #expect(try scratch.read("id.pem") == originalPrivate && scratch.read("id.pub") == originalPublic)

        // A planted symbolic link (dangling or not) is not followed or replaced.
        let victim = try scratch.write("victim", Data("keep me".utf8))
        let link = scratch.path("planted.pem")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: victim)
        let dangling = scratch.path("dangling.pem")
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: scratch.path("nowhere"))
        for path in [link, dangling] {
            result = try sf(["key", "generate", "--type", "ed25519", "--out", path])
            #expect(result.status == 1)
        }
        #expect(try scratch.read("victim") == Data("keep me".utf8))
        #expect(!FileManager.default.fileExists(atPath: scratch.path("nowhere")))

        result = try sf(["key", "generate", "--type", "p256", "--out", privatePath, "--public-out", publicPath, "--force"])
        #expect(result.status == 0)
        #expect(try scratch.read("id.pem") != originalPrivate)
    }

    /// Item 13: `sf key fingerprint` reads an encrypted PKCS#8 file with --passphrase-file.
    @Test func fingerprintOfAnEncryptedPrivateKey() throws {
        let scratch = try Scratch()
        let passphrase = try scratch.write("pass", Data("key passphrase\n".utf8))
        let generated = try sf(["key", "generate", "--type", "p256", "--out", scratch.path("enc.pem"), "--passphrase-file", passphrase])
        #expect(generated.status == 0, "\(generated.stderrText)")
        let plain = try sf(["key", "generate", "--type", "p256", "--out", scratch.path("plain.pem"), "--public-out", scratch.path("plain.pub")])
        #expect(plain.status == 0)
        let result = try sf(["key", "fingerprint", scratch.path("enc.pem"), "--passphrase-file", passphrase])
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(!result.stderrText.contains("parsable argument"))
        // The same fingerprint as the public key exported from it.
        let exported = try sf(["key", "export", "--in", scratch.path("enc.pem"), "--passphrase-file", passphrase, "--format", "spki-pem", "-o", scratch.path("enc.pub")])
        #expect(exported.status == 0, "\(exported.stderrText)")
        let ofPublic = try sf(["key", "fingerprint", scratch.path("enc.pub")])
        #expect(ofPublic.status == 0 && result.stdoutText == ofPublic.stdoutText)
        #expect(result.stdoutText.hasPrefix("p256 sha256-spki:"))
        let wrong = try scratch.write("wrong", Data("nope\n".utf8))
        let refused = try sf(["key", "fingerprint", scratch.path("enc.pem"), "--passphrase-file", wrong])
        #expect(refused.status == 1 && refused.stdout.isEmpty)
        #expect(!refused.stderrText.contains("parsable argument"))
        // Public and clear private files need no passphrase.
        #expect(try sf(["key", "fingerprint", scratch.path("plain.pub")]).status == 0)
        #expect(try sf(["key", "fingerprint", scratch.path("plain.pem")]).status == 0)
    }
}

/// Issue 12 item 5 through the CLI: with the sealer given, a swapped public item is refused.
@Suite struct KeyPairBindingCLITests {
    @Test func swappedPublicItemIsRefusedWhenTheSealerIsGiven() throws {
        let scratch = try Scratch()
        let kc = ["--keychain", scratch.path("keychain.db")]
        let phrase = try scratch.write("phrase", Data("store passphrase\n".utf8))
        let store = kc + ["--key-passphrase-file", phrase]
        #expect(try sf(["key", "generate", "--type", "x25519", "--tag", "me"] + store).status == 0)
        #expect(try sf(["key", "export", "--tag", "me", "--format", "spki-pem"] + store).status == 0)

        let keychain = try Keychain(path: scratch.path("keychain.db"))
        let attacker = try AsymmetricPrivateKey.generate(.x25519).publicKey
        try keychain.replace([Keychain.NewItem(
            identity: KeychainItem.Identity(.key, service: KeyStore.service, account: "me"), value: attacker.spkiDERRepresentation)])
        try keychain.close()

        for arguments in [
            ["key", "export", "--tag", "me", "--format", "spki-pem"] + store,
            ["key", "encrypt", "--tag", "me"] + store,
            ["key", "decrypt", "--tag", "me"] + store,
        ] {
            let result = try sf(arguments, stdin: Data("x".utf8))
            #expect(result.status == 1, "\(arguments[1])")
            #expect(result.stderrText.contains("not the public half"), "\(arguments[1]): \(result.stderrText)")
            #expect(result.stdout.isEmpty)
        }
    }

    /// Issue 21: deleting a stored pair's private item (the hardening campaign's reproducer) does
    /// not turn it into a partner key that `key encrypt --tag` with the passcode encrypts to.
    @Test func aPairWithoutItsPrivateItemIsRefused() throws {
        let scratch = try Scratch()
        let kc = ["--keychain", scratch.path("keychain.db")]
        let phrase = try scratch.write("phrase", Data("store passphrase\n".utf8))
        let store = kc + ["--key-passphrase-file", phrase]
        #expect(try sf(["key", "generate", "--type", "x25519", "--tag", "T"] + store).status == 0)
        let edited = try TestSupport.run("python3", ["-c", """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("DELETE FROM items WHERE account = 'T.private'")
            db.commit()
            """, scratch.path("keychain.db")])
        try #require(edited.status == 0, "\(edited.stderrText)")
        for arguments in [["key", "encrypt", "--tag", "T"] + store, ["key", "export", "--tag", "T", "--format", "spki-pem"] + store] {
            let result = try sf(arguments, stdin: Data("to the pair".utf8))
            #expect(result.status == 1 && result.stdout.isEmpty, "\(arguments[1])")
            #expect(result.stderrText.contains("has lost its private key"), "\(arguments[1]): \(result.stderrText)")
        }

        // A partner key imported without the vault is refused where authentication is asked for,
        // until it is imported again with it.
        let partner = try AsymmetricPrivateKey.generate(.x25519).publicKey
        try partner.exported(as: .spkiPEM).write(to: URL(fileURLWithPath: scratch.path("bob.pub")))
        #expect(try sf(["key", "import", "--tag", "bob", scratch.path("bob.pub")] + kc).status == 0)
        var result = try sf(["key", "encrypt", "--tag", "bob"] + store, stdin: Data("x".utf8))
        #expect(result.status == 1 && result.stderrText.contains("not authenticated"), "\(result.stderrText)")
        #expect(try sf(["key", "encrypt", "--tag", "bob"] + kc, stdin: Data("x".utf8)).status == 0)  // unverified, as documented
        #expect(try sf(["key", "import", "--tag", "bob", scratch.path("bob.pub")] + store).status == 0)
        result = try sf(["key", "encrypt", "--tag", "bob"] + store, stdin: Data("x".utf8))
        #expect(result.status == 0, "\(result.stderrText)")
    }

    /// Issue 20: a Heimdall payload far over the 64 MiB maximum is refused by its size, before it is
    /// decoded, with a message, under a 4 GB address-space limit (it used to abort with "failed to
    /// allocate" while copying a 700 MB text several times).
    @Test func hugeHeimdallPayloadIsRefusedBySize() throws {
        let scratch = try Scratch()
        #expect(try sf(["key", "generate", "--type", "rsa2048", "--out", scratch.path("k.pem")]).status == 0)
        let payload = scratch.path("payload.txt")
        try Data(repeating: UInt8(ascii: "A"), count: 200 << 20).write(to: URL(fileURLWithPath: payload))
        let binary = try #require(TestSupport.sfBinary).path
        let result = try TestSupport.run("/bin/sh", ["-c", "ulimit -v 4000000 && exec \"$0\" \"$@\"", binary,
                                                     "key", "decrypt", "--heimdall", "--key", scratch.path("k.pem"), payload])
        #expect(result.status == 1 && result.stdout.isEmpty, "\(result.stderrText)")
        #expect(result.stderrText.contains("larger than a Heimdall message may be (64 MiB)"), "\(result.stderrText)")
    }
}
