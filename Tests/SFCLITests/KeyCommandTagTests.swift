import Foundation
import SFTestSupport
import Testing

/// `sf key` with keys kept in the keychain by tag, private keys sealed with the vault.
@Suite struct KeyCommandTagTests {
    /// A partner key stored without the vault is refused where the vault could authenticate it:
    /// with the passcode typed at the prompt (to open the key pair by tag) as well as given in a
    /// file. Before, only --passcode-file made a command check the keys it took by tag, so a
    /// sender key swapped in the keychain authenticated a forged message once the passcode was typed.
    @Test(.requires(.pythonCryptography)) func aTypedPasscodeAuthenticatesTheKeysTakenByTag() throws {
        let binary = try #require(TestSupport.sfBinary).path
        let scratch = try Scratch()
        let kc = ["--keychain", scratch.path("keychain.db")]
        let passcode = try scratch.write("passcode", Data("key store passcode\n".utf8))
        let questions = try scratch.write("questions", Data("First pet?\n".utf8))
        let answers = try scratch.write("answers", Data("Rex\n".utf8))
        var result = try sf(["vault", "init"] + kc + [
            "--passcode-file", passcode, "--questions-file", questions, "--answers-file", answers, "--scrypt-log-n", "10",
        ])
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["key", "generate", "--type", "x25519", "--tag", "bob"] + kc + ["--passcode-file", passcode])
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["key", "export", "--tag", "bob", "--format", "spki-pem", "-o", scratch.path("bob.pub")] + kc)
        #expect(result.status == 0, "\(result.stderrText)")
        // Whoever can write the keychain stores "alice" as its own key, without the vault.
        result = try sf(["key", "generate", "--type", "x25519", "--out", scratch.path("mallory.pem"), "--public-out", scratch.path("mallory.pub")])
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["key", "import", "--tag", "alice", scratch.path("mallory.pub")] + kc)
        #expect(result.status == 0, "\(result.stderrText)")
        let message = try scratch.write("message", Data("from alice, honestly".utf8))
        result = try sf(["key", "encrypt", "--to", scratch.path("bob.pub"), "--from", scratch.path("mallory.pem"), "-o", scratch.path("m.sfk"), message])
        #expect(result.status == 0, "\(result.stderrText)")

        // Bob decrypts "from alice", typing the passcode at the prompt.
        let script = """
            import os, pty, sys, termios, time
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], sys.argv[1:])
            deadline = time.monotonic() + 300
            while termios.tcgetattr(fd)[3] & termios.ECHO:
                if time.monotonic() > deadline:
                    print("no prompt"); sys.exit(3)
                time.sleep(0.01)
            os.write(fd, b"key store passcode\\n")
            output = b""
            while True:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                output += chunk
            _, status = os.waitpid(pid, 0)
            print(os.WEXITSTATUS(status))
            print(output.decode(errors="replace"))
            """
        let decrypted = try TestSupport.run(
            try TestSupport.path(of: .pythonCryptography),
            ["-c", script, binary, "key", "decrypt", "--tag", "bob", "--from-tag", "alice", scratch.path("m.sfk")] + kc)
        let lines = decrypted.stdoutText.split(separator: "\n", maxSplits: 1).map(String.init)
        #expect(lines.first == "1", "\(decrypted.stdoutText) \(decrypted.stderrText)")
        #expect(!decrypted.stdoutText.contains("from alice, honestly"), "the forged message was opened as Alice's")
        #expect(decrypted.stdoutText.contains("not authenticated by the vault"), "\(decrypted.stdoutText)")
    }

    @Test func generateListSignVerifyEncryptImportDeleteByTag() throws {
        let scratch = try Scratch()
        let kc = ["--keychain", scratch.path("keychain.db")]
        let passcode = try scratch.write("passcode", Data("key store passcode\n".utf8))
        let wrong = try scratch.write("wrong", Data("not the passcode\n".utf8))
        let questions = try scratch.write("questions", Data("First pet?\n".utf8))
        let answers = try scratch.write("answers", Data("Rex\n".utf8))
        let vault = kc + ["--passcode-file", passcode]
        var result = try sf(["vault", "init"] + kc + [
            "--passcode-file", passcode, "--questions-file", questions, "--answers-file", answers, "--scrypt-log-n", "10",
        ])
        #expect(result.status == 0, "\(result.stderrText)")

        result = try sf(["key", "generate", "--type", "ed25519", "--tag", "signer"] + vault)
        #expect(result.status == 0, "\(result.stderrText)")
        let fingerprint = result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ").last.map(String.init)
        result = try sf(["key", "generate", "--type", "ed25519", "--tag", "signer"] + vault)
        #expect(result.status == 1 && result.stdout.isEmpty && result.stderrText.contains("already exists"))
        result = try sf(["key", "generate", "--type", "p256", "--tag", "locked"] + kc + ["--passcode-file", wrong])
        #expect(result.status == 1 && result.stdout.isEmpty)
        result = try sf(["key", "generate", "--type", "p256", "--tag", "t", "--out", scratch.path("both.pem")] + vault)
        #expect(result.status == 2)

        // A partner key from a public key file; a private key file is sealed.
        result = try sf(["key", "generate", "--type", "x25519", "--out", scratch.path("bob.pem"), "--public-out", scratch.path("bob.pub")])
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["key", "import", "--tag", "bob", scratch.path("bob.pub")] + vault)
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["key", "import", "--tag", "bob-pair", scratch.path("bob.pem")] + vault)
        #expect(result.status == 0, "\(result.stderrText)")

        result = try sf(["key", "list"] + kc)
        #expect(result.status == 0)
        let lines = result.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines.contains { $0.hasPrefix("signer\ted25519\t\(fingerprint ?? "?")\tpair") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("bob\tx25519\t") && $0.hasSuffix("\tpartner") })
        #expect(lines.contains { $0.hasPrefix("bob-pair\tx25519\t") && $0.hasSuffix("\tpair") })

        // Sign and verify by tag; a wrong passcode signs nothing.
        let messageBytes = Data("signed through the keychain".utf8)
        let message = try scratch.write("message", messageBytes)
        result = try sf(["key", "sign", "--tag", "signer", "-o", scratch.path("sig"), message] + vault)
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["key", "verify", "--tag", "signer", "--signature", scratch.path("sig"), message] + kc)
        #expect(result.status == 0 && result.stdoutText.contains("signature valid"), "\(result.stderrText)")
        result = try sf(["key", "sign", "--tag", "signer", message] + kc + ["--passcode-file", wrong])
        #expect(result.status == 1 && result.stdout.isEmpty && result.stderrText.contains("wrong passcode"))
        result = try sf(["key", "sign", "--tag", "bob", message] + vault)
        #expect(result.status == 1 && result.stderrText.contains("partner"))
        result = try sf(["key", "sign", "--tag", "signer", "--key", scratch.path("bob.pem"), message] + vault)
        #expect(result.status == 2)

        // Encrypt to the partner tag; the file private key decrypts; the sealed pair decrypts by tag.
        result = try sf(["key", "encrypt", "--tag", "bob", "-o", scratch.path("sealed"), message] + kc)
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["key", "decrypt", "--key", scratch.path("bob.pem"), scratch.path("sealed")])
        #expect(result.status == 0 && result.stdout == messageBytes)
        result = try sf(["key", "decrypt", "--tag", "bob-pair", scratch.path("sealed")] + vault)
        #expect(result.status == 0 && result.stdout == messageBytes, "\(result.stderrText)")

        // Export by tag: public formats without the passcode, PKCS#8 through the vault.
        result = try sf(["key", "export", "--tag", "bob", "--format", "spki-pem"] + kc)
        #expect(try result.status == 0 && result.stdout == scratch.read("bob.pub"))
        result = try sf(["key", "export", "--tag", "bob-pair", "--format", "pkcs8"] + vault)
        #expect(try result.status == 0 && result.stdout == scratch.read("bob.pem"), "\(result.stderrText)")

        result = try sf(["key", "delete", "--tag", "bob-pair"] + kc)
        #expect(result.status == 0)
        result = try sf(["key", "delete", "--tag", "bob-pair"] + kc)
        #expect(result.status == 1 && result.stderrText.contains("no key with tag"))
        result = try sf(["key", "list"] + kc)
        #expect(result.stdoutText.split(separator: "\n").count == 2)
    }
}

/// Without a vault: stored private keys sealed with a passphrase file, and senders named by tag.
@Suite struct KeyCommandPassphraseStoreTests {
    @Test func passphraseSealedKeysAndSenderTags() throws {
        let scratch = try Scratch()
        let kc = ["--keychain", scratch.path("keychain.db")]
        let phrase = try scratch.write("phrase", Data("store passphrase\n".utf8))
        let wrong = try scratch.write("wrong", Data("another passphrase\n".utf8))
        let store = kc + ["--key-passphrase-file", phrase]

        for tag in ["alice", "bob"] {
            let result = try sf(["key", "generate", "--type", "x25519", "--tag", tag] + store)
            #expect(result.status == 0, "\(result.stderrText)")
        }
        let message = Data("from alice, by tag".utf8)
        var result = try sf(["key", "encrypt", "--tag", "bob", "--from-tag", "alice"] + store, stdin: message)
        #expect(result.status == 0, "\(result.stderrText)")
        let sealed = result.stdout

        result = try sf(["key", "decrypt", "--tag", "bob", "--from-tag", "alice"] + store, stdin: sealed)
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stdout == message)

        // The wrong expected sender, and the wrong store passphrase, are both refused with nothing on stdout.
        result = try sf(["key", "decrypt", "--tag", "bob", "--from-tag", "bob"] + store, stdin: sealed)
        #expect(result.status == 1 && result.stdout.isEmpty)
        result = try sf(["key", "decrypt", "--tag", "bob", "--from-tag", "alice"] + kc + ["--key-passphrase-file", wrong], stdin: sealed)
        #expect(result.status == 1 && result.stdout.isEmpty)

        result = try sf(["key", "encrypt", "--tag", "bob", "--from-tag", "alice", "--from", phrase] + store, stdin: message)
        #expect(result.status == 2)
    }
}
