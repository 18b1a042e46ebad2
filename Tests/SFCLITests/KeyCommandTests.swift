import Foundation
import SFTestSupport
import Testing

@Suite struct KeyCommandTests {
    @Test func generateEncryptedThenExportAndFingerprint() throws {
        let scratch = try Scratch()
        let pass = try scratch.write("pass", Data("generate passphrase\n".utf8))
        let generated = try sf(["key", "generate", "--type", "rsa2048", "--out", scratch.path("rsa.pem"), "--passphrase-file", pass,
                                "--public-out", scratch.path("rsa.pub")])
        #expect(generated.status == 0, "\(generated.stderrText)")
        #expect(generated.stdoutText.hasPrefix("rsa2048 sha256-spki:"))
        let pem = try scratch.read("rsa.pem")
        #expect(String(decoding: pem, as: UTF8.self).hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
        let attributes = try FileManager.default.attributesOfItem(atPath: scratch.path("rsa.pem"))
        #expect((attributes[.posixPermissions] as? Int) == 0o600)

        let fingerprint = try sf(["key", "fingerprint", scratch.path("rsa.pub")])
        #expect(generated.stdoutText.split(separator: " ")[1].trimmingCharacters(in: .newlines) == fingerprint.stdoutText.split(separator: " ")[1])

        let publicPEM = try scratch.read("rsa.pub")
        let spki = try sf(["key", "export", "--in", scratch.path("rsa.pem"), "--passphrase-file", pass, "--format", "spki-pem"])
        #expect(spki.status == 0 && spki.stdout == publicPEM)
        let wrong = try scratch.write("wrong", Data("nope\n".utf8))
        let refused = try sf(["key", "export", "--in", scratch.path("rsa.pem"), "--passphrase-file", wrong, "--format", "pkcs8"])
        #expect(refused.status == 1 && refused.stdout.isEmpty && refused.stderrText.contains("wrong passphrase"))
    }

    // Live peer: ssh-keygen -l prints the OpenSSH fingerprint sf key fingerprint prints too.
    @Test(.requires(.sshKeygen), arguments: ["ed25519", "ecdsa", "rsa"])
    func fingerprintsAreUnambiguousAndMatchSSHKeygen(type: String) throws {
        let keygen = try TestSupport.path(of: .sshKeygen)
        let scratch = try Scratch()
        #expect(try TestSupport.run(keygen, ["-q", "-t", type, "-N", "", "-f", scratch.path("id")]).status == 0)
        let theirs = try TestSupport.run(keygen, ["-l", "-E", "sha256", "-f", scratch.path("id.pub")])
        let openSSH = try #require(theirs.stdoutText.split(separator: " ").dropFirst().first.map(String.init))
        #expect(openSSH.hasPrefix("SHA256:"))
        for file in ["id", "id.pub"] {
            let ours = try sf(["key", "fingerprint", scratch.path(file)])
            let fields = ours.stdoutText.trimmingCharacters(in: .newlines).split(separator: " ").map(String.init)
            #expect(ours.status == 0 && fields.count == 3, "\(ours.stdoutText) \(ours.stderrText)")
            #expect(fields.count == 3 && fields[1].hasPrefix("sha256-spki:") && fields[1].count == 12 + 64 && fields[2] == openSSH)
        }
        // X25519 has no OpenSSH form: only the SPKI fingerprint.
        #expect(try sf(["key", "generate", "--type", "x25519", "--out", scratch.path("x.pem")]).status == 0)
        let x = try sf(["key", "fingerprint", scratch.path("x.pem")])
        #expect(x.stdoutText.split(separator: " ").count == 2 && x.stdoutText.hasPrefix("x25519 sha256-spki:"))
    }

    /// A generation that fails at either output leaves neither: no private key file without its
    /// public one, and the reverse.
    @Test func aFailedGenerationLeavesNoOutput() throws {
        let scratch = try Scratch()
        let missing = scratch.path("no-such-directory")
        for (out, publicOut) in [(scratch.path("a.pem"), missing + "/a.pub"), (missing + "/b.pem", scratch.path("b.pub"))] {
            let result = try sf(["key", "generate", "--type", "x25519", "--out", out, "--public-out", publicOut])
            #expect(result.status == 1, "\(result.stderrText)")
            for path in [out, publicOut] { #expect(!FileManager.default.fileExists(atPath: path), "\(path) was left") }
        }
        // A public output that was already there (here a link, with --force) is never removed.
        let target = try scratch.write("target.pub", Data("old".utf8))
        let link = scratch.path("link.pub")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let failed = try sf(["key", "generate", "--type", "x25519", "--out", missing + "/c.pem", "--public-out", link, "--force"])
        #expect(failed.status == 1, "\(failed.stderrText)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        // Both written when both can be, and a second run is not refused for a leftover.
        let result = try sf(["key", "generate", "--type", "x25519", "--out", scratch.path("a.pem"), "--public-out", scratch.path("b.pub")])
        #expect(result.status == 0, "\(result.stderrText)")
    }

    // Live peer: OpenSSL signs with PSS with every salt-length setting (its default is `max`); sf
    // verifies them all, and refuses a signature of another message.
    @Test(.requires(.openssl)) func verifyOpenSSLPSSSignatures() throws {
        let openssl = try TestSupport.path(of: .openssl)
        let scratch = try Scratch()
        #expect(try sf(["key", "generate", "--type", "rsa2048", "--out", scratch.path("k.pem"), "--public-out", scratch.path("k.pub")]).status == 0)
        let message = try scratch.write("msg", Data("pss from openssl".utf8))
        let other = try scratch.write("other", Data("pss from openssl!".utf8))
        for salt in ["digest", "max", "auto", "0", "20"] {
            for hash in ["sha256", "sha384", "sha512"] {
                var sign = ["dgst", "-\(hash)", "-sign", scratch.path("k.pem"), "-sigopt", "rsa_padding_mode:pss"]
                if salt != "max" { sign += ["-sigopt", "rsa_pss_saltlen:\(salt)"] }  // max: OpenSSL's default
                let signed = try TestSupport.run(openssl, sign + ["-out", scratch.path("sig"), message])
                #expect(signed.status == 0, "\(signed.stderrText)")
                let verified = try sf(["key", "verify", "--key", scratch.path("k.pub"), "--scheme", "rsa-pss-\(hash)",
                                       "--signature", scratch.path("sig"), message])
                #expect(verified.status == 0 && verified.stdoutText.hasPrefix("signature valid: rsa2048 sha256-spki:"),
                        "\(salt) \(hash): \(verified.stderrText)")
                let refused = try sf(["key", "verify", "--key", scratch.path("k.pub"), "--scheme", "rsa-pss-\(hash)",
                                      "--signature", scratch.path("sig"), other])
                #expect(refused.status == 1 && refused.stdout.isEmpty, "\(salt) \(hash)")
            }
        }
    }

    // Live peer: OpenSSL opens the passphrase-encrypted PKCS#8 that sf key generate writes.
    @Test(.requires(.openssl)) func opensslOpensAGeneratedEncryptedKey() throws {
        let openssl = try TestSupport.path(of: .openssl)
        let scratch = try Scratch()
        let pass = try scratch.write("pass", Data("generate passphrase\n".utf8))
        let generated = try sf(["key", "generate", "--type", "p256", "--out", scratch.path("k.pem"), "--passphrase-file", pass,
                                "--public-out", scratch.path("k.pub")])
        #expect(generated.status == 0, "\(generated.stderrText)")
        let opened = try TestSupport.run(openssl, ["pkey", "-in", scratch.path("k.pem"), "-passin", "file:\(pass)", "-pubout"])
        let publicPEM = try scratch.read("k.pub")
        #expect(opened.status == 0 && opened.stdout == publicPEM, "\(opened.stderrText)")
    }

    /// Publishing a key as a JWK from its private key file wrote the private key (`d`), as pkcs1
    /// did for RSA; and an export or `keygen -y` onto the file it read replaced the private key
    /// with its public half. Private material now needs a pkcs8 format or --private, and the
    /// output is never the input.
    @Test func exportsArePublicUnlessAskedAndNeverReplaceTheirInput() throws {
        let scratch = try Scratch()
        #expect(try sf(["key", "generate", "--type", "p256", "--out", scratch.path("k.pem")]).status == 0)
        let published = try sf(["key", "export", "--in", scratch.path("k.pem"), "--format", "jwk"])
        let jwk = try #require(try JSONSerialization.jsonObject(with: published.stdout) as? [String: Any], "\(published.stderrText)")
        #expect(jwk["d"] == nil && jwk["x"] != nil, "\(jwk.keys)")
        let privateJWK = try sf(["key", "export", "--in", scratch.path("k.pem"), "--format", "jwk", "--private"])
        #expect((try JSONSerialization.jsonObject(with: privateJWK.stdout) as? [String: Any])?["d"] != nil, "\(privateJWK.stderrText)")
        #expect(try sf(["key", "export", "--in", scratch.path("k.pem"), "--format", "spki-pem", "--private"]).status == 2)

        let before = try scratch.read("k.pem")
        let onItself = try sf(["key", "export", "--in", scratch.path("k.pem"), "--format", "spki-pem", "-o", scratch.path("k.pem")])
        #expect(onItself.status == 1 && onItself.stderrText.contains("is the key file read"), "\(onItself.stderrText)")
        #expect(try scratch.read("k.pem") == before)

        #expect(try sf(["keygen", "-o", scratch.path("id.txt")]).status == 0)
        let identity = try scratch.read("id.txt")
        let converted = try sf(["keygen", "-y", "-o", scratch.path("id.txt"), scratch.path("id.txt")])
        #expect(converted.status == 1 && converted.stderrText.contains("is the identity file read"), "\(converted.stderrText)")
        #expect(try scratch.read("id.txt") == identity)
    }

    @Test func exportFormatsAndUsageErrors() throws {
        let scratch = try Scratch()
        #expect(try sf(["key", "generate", "--type", "ed25519", "--out", scratch.path("ed.pem")]).status == 0)
        for format in ["spki-pem", "spki-der", "pkcs8", "pkcs8-der", "openssh", "jwk"] {
            let exported = try sf(["key", "export", "--in", scratch.path("ed.pem"), "--format", format, "-o", scratch.path("ed.\(format)")])
            #expect(exported.status == 0, "\(format): \(exported.stderrText)")
            let back = try sf(["key", "fingerprint", scratch.path("ed.\(format)")])
            #expect(back.status == 0 && back.stdoutText.hasPrefix("ed25519 sha256-spki:"), "\(format)")
        }
        let notRSA = try sf(["key", "export", "--in", scratch.path("ed.pem"), "--format", "pkcs1"])
        #expect(notRSA.status == 1 && notRSA.stdout.isEmpty)
        #expect(try sf(["key", "export", "--in", scratch.path("ed.pem"), "--format", "bogus"]).status == 2)
        #expect(try sf(["key", "generate", "--type", "rsa512", "--out", scratch.path("x")]).status == 2)
        #expect(try sf(["key", "export", "--in", scratch.path("ed.pem"), "--format", "pkcs8-encrypted"]).status == 2)
        let garbage = try scratch.write("garbage", Data("not a key".utf8))
        let malformed = try sf(["key", "fingerprint", garbage])
        #expect(malformed.status == 1 && malformed.stderrText.contains("not a key in a recognized format"))
    }

    @Test func encryptDecryptWithSenderAuthentication() throws {
        let scratch = try Scratch()
        for name in ["alice", "bob", "carol"] {
            #expect(try sf(["key", "generate", "--type", "x25519", "--out", scratch.path("\(name).pem"), "--public-out", scratch.path("\(name).pub")]).status == 0)
        }
        let message = try scratch.write("message", Data("meet at noon".utf8))
        let sealed = try sf(["key", "encrypt", "--to", scratch.path("bob.pub"), "--from", scratch.path("alice.pem"), message, "-o", scratch.path("sealed")])
        #expect(sealed.status == 0 && sealed.stdout.isEmpty)
        let opened = try sf(["key", "decrypt", "--key", scratch.path("bob.pem"), "--from", scratch.path("alice.pub"), scratch.path("sealed")])
        #expect(opened.status == 0 && opened.stdoutText == "meet at noon")
        let wrongSender = try sf(["key", "decrypt", "--key", scratch.path("bob.pem"), "--from", scratch.path("carol.pub"), scratch.path("sealed")])
        #expect(wrongSender.status == 1 && wrongSender.stdout.isEmpty && wrongSender.stderrText.contains("unexpected key"))
        let wrongRecipient = try sf(["key", "decrypt", "--key", scratch.path("carol.pem"), "--from", scratch.path("alice.pub"), scratch.path("sealed")])
        #expect(wrongRecipient.status == 1 && wrongRecipient.stderrText.contains("different key"))
        var tampered = try scratch.read("sealed")
        tampered[tampered.count - 1] ^= 1
        let tamperedFile = try scratch.write("tampered", tampered)
        let refused = try sf(["key", "decrypt", "--key", scratch.path("bob.pem"), "--from", scratch.path("alice.pub"), tamperedFile, "-o", scratch.path("out")])
        #expect(refused.status == 1 && !FileManager.default.fileExists(atPath: scratch.path("out")))
    }

    @Test func signVerifyAndHeimdall() throws {
        let scratch = try Scratch()
        #expect(try sf(["key", "generate", "--type", "rsa2048", "--out", scratch.path("rsa.pem"), "--public-out", scratch.path("rsa.pub")]).status == 0)
        let message = try scratch.write("message", Data("signed text".utf8))
        for (flags, verifyFlags) in [([String](), [String]()), (["--binary"], []), (["--heimdall", "--url-safe"], ["--heimdall"]), (["--scheme", "rsa-pkcs1v15-sha256"], ["--scheme", "rsa-pkcs1v15-sha256"])] {
            let signed = try sf(["key", "sign", "--key", scratch.path("rsa.pem"), message, "-o", scratch.path("sig")] + flags)
            #expect(signed.status == 0, "\(flags): \(signed.stderrText)")
            let verified = try sf(["key", "verify", "--key", scratch.path("rsa.pub"), "--signature", scratch.path("sig"), message] + verifyFlags)
            #expect(verified.status == 0, "\(flags): \(verified.stderrText)")
            let other = try scratch.write("other", Data("signed text!".utf8))
            let rejected = try sf(["key", "verify", "--key", scratch.path("rsa.pub"), "--signature", scratch.path("sig"), other] + verifyFlags)
            #expect(rejected.status == 1 && rejected.stdout.isEmpty, "\(flags)")
        }
        let sealed = try sf(["key", "encrypt", "--heimdall", "--to", scratch.path("rsa.pub"), message])
        #expect(sealed.status == 0)
        let opened = try sf(["key", "decrypt", "--heimdall", "--key", scratch.path("rsa.pem")], stdin: sealed.stdout)
        #expect(opened.status == 0 && opened.stdoutText == "signed text")
    }
}
