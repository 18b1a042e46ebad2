import Foundation
import SFTestSupport
import SecureCore
import SecureKeys
import Testing

/// Keys, exports and signatures exchanged with the `openssl` command (OpenSSL 3).
@Suite struct OpenSSLPeerTests {
    static let types: [KeyType] = [.rsa2048, .p256, .p384, .p521, .ed25519, .x25519]
    static let passphrase = "peer passphrase"

    // Live peer: OpenSSL.
    @Test(.requires(.openssl), arguments: types)
    func opensslEncryptedPKCS8Imports(type: KeyType) throws {
        let openssl = try TestSupport.path(of: .openssl)
        let (pem, key) = Fixtures.key(type)
        let passFile = try Fixtures.file(Data(Self.passphrase.utf8), "pass")
        let encrypted = try TestSupport.run(
            openssl, ["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", "file:\(passFile)"], stdin: Data(pem.utf8))
        try #require(encrypted.status == 0, "\(encrypted.stderrText)")
        #expect(encrypted.stdoutText.hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
        let imported = try KeyImport.privateKey(from: encrypted.stdout, passphrase: SecretBytes(Data(Self.passphrase.utf8)))
        #expect(imported.pkcs8DERRepresentation == key.pkcs8DERRepresentation)
        #expect(keyError { _ = try KeyImport.privateKey(from: encrypted.stdout, passphrase: SecretBytes(Data("nope".utf8))) } == .wrongPassphrase)
    }

    // Live peer: OpenSSL.
    @Test(.requires(.openssl), arguments: types)
    func opensslReadsOurExports(type: KeyType) throws {
        let openssl = try TestSupport.path(of: .openssl)
        let key = try AsymmetricPrivateKey.generate(type == .rsa2048 ? .p256 : type)
        let effective = type == .rsa2048 ? Fixtures.rsa2048.key : key
        let expectedSPKI = try effective.publicKey.exported(as: .spkiPEM)

        let pkcs8 = try Fixtures.file(try effective.exported(as: .pkcs8).data)
        let fromPKCS8 = try TestSupport.run(openssl, ["pkey", "-in", pkcs8, "-pubout"])
        #expect(fromPKCS8.status == 0 && fromPKCS8.stdout == expectedSPKI, "\(fromPKCS8.stderrText)")

        let pkcs8DER = try Fixtures.file(try effective.exported(as: .pkcs8DER).data)
        let fromDER = try TestSupport.run(openssl, ["pkey", "-inform", "DER", "-in", pkcs8DER, "-pubout"])
        #expect(fromDER.status == 0 && fromDER.stdout == expectedSPKI, "\(fromDER.stderrText)")

        let spkiDER = try Fixtures.file(try effective.publicKey.exported(as: .spkiDER))
        let fromSPKI = try TestSupport.run(openssl, ["pkey", "-pubin", "-inform", "DER", "-in", spkiDER, "-pubout"])
        #expect(fromSPKI.status == 0 && fromSPKI.stdout == expectedSPKI, "\(fromSPKI.stderrText)")

        let passFile = try Fixtures.file(Data(Self.passphrase.utf8), "pass")
        let encrypted = try Fixtures.file(
            try effective.exported(as: .pkcs8Encrypted, passphrase: SecretBytes(Data(Self.passphrase.utf8)), iterations: 10_000).data)
        let decrypted = try TestSupport.run(openssl, ["pkcs8", "-in", encrypted, "-passin", "file:\(passFile)"])
        try #require(decrypted.status == 0, "\(decrypted.stderrText)")
        let reimported = try KeyImport.privateKey(from: decrypted.stdout)
        #expect(reimported.pkcs8DERRepresentation == effective.pkcs8DERRepresentation)

        if case .rsa = effective {
            let pkcs1 = try Fixtures.file(try effective.exported(as: .pkcs1).data)
            let fromPKCS1 = try TestSupport.run(openssl, ["rsa", "-in", pkcs1, "-pubout"])
            #expect(fromPKCS1.status == 0 && fromPKCS1.stdout == expectedSPKI, "\(fromPKCS1.stderrText)")
            let publicPKCS1 = try Fixtures.file(try effective.publicKey.exported(as: .pkcs1))
            let fromPublicPKCS1 = try TestSupport.run(openssl, ["rsa", "-RSAPublicKey_in", "-in", publicPKCS1, "-pubout"])
            #expect(fromPublicPKCS1.status == 0 && fromPublicPKCS1.stdout == expectedSPKI, "\(fromPublicPKCS1.stderrText)")
        }
    }

    // Live peer: OpenSSL.
    @Test(.requires(.openssl)) func opensslTraditionalFormatsImport() throws {
        let openssl = try TestSupport.path(of: .openssl)
        let rsaPKCS1 = try TestSupport.run(openssl, ["rsa", "-traditional"], stdin: Data(Fixtures.rsa2048.pem.utf8))
        #expect(try KeyImport.privateKey(from: rsaPKCS1.stdout).pkcs8DERRepresentation == Fixtures.rsa2048.key.pkcs8DERRepresentation)
        let sec1 = try TestSupport.run(openssl, ["ec"], stdin: Data(Fixtures.p384.pem.utf8))
        #expect(sec1.stdoutText.hasPrefix("-----BEGIN EC PRIVATE KEY-----"))
        #expect(try KeyImport.privateKey(from: sec1.stdout).publicKey.fingerprint == Fixtures.p384.key.publicKey.fingerprint)
        let publicPKCS1 = try TestSupport.run(openssl, ["rsa", "-RSAPublicKey_out"], stdin: Data(Fixtures.rsa2048.pem.utf8))
        #expect(try KeyImport.publicKey(from: publicPKCS1.stdout).fingerprint == Fixtures.rsa2048.key.publicKey.fingerprint)
    }

    // Live peer: OpenSSL.
    @Test(.requires(.openssl)) func fingerprintMatchesOpenSSLsSPKI() throws {
        let openssl = try TestSupport.path(of: .openssl)
        for type in Self.types {
            let (pem, key) = Fixtures.key(type)
            let der = try TestSupport.run(openssl, ["pkey", "-pubout", "-outform", "DER"], stdin: Data(pem.utf8))
            #expect(der.stdout == key.publicKey.spkiDERRepresentation, "\(type)")
            #expect(key.publicKey.fingerprint.bytes == Hashing.hash(der.stdout, with: .sha256))
        }
    }

    // Live peer: OpenSSL.
    @Test(.requires(.openssl), arguments: [(KeyType.rsa2048, SignatureScheme.rsaPSS), (.rsa2048, .rsaPKCS1v15), (.p256, .ecdsaDER), (.p384, .ecdsaDER), (.p521, .ecdsaDER), (.ed25519, .ed25519)])
    func signaturesInteroperate(type: KeyType, scheme: SignatureScheme) throws {
        let openssl = try TestSupport.path(of: .openssl)
        let (pem, key) = Fixtures.key(type)
        let message = Data("interoperable signature \(type)".utf8)
        let messageFile = try Fixtures.file(message, "msg")
        let keyFile = try Fixtures.file(Data(pem.utf8), "key")
        let publicFile = try Fixtures.file(try key.publicKey.exported(as: .spkiPEM), "pub")
        let digest = type == .p384 ? "-sha384" : type == .p521 ? "-sha512" : "-sha256"
        let pssOptions = scheme == .rsaPSS ? ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32"] : []

        // Ours → openssl.
        let ours = try Fixtures.file(try key.signature(for: message, scheme: scheme), "sig")
        let verify: ProcessResult
        if scheme == .ed25519 {
            verify = try TestSupport.run(openssl, ["pkeyutl", "-verify", "-pubin", "-inkey", publicFile, "-rawin", "-in", messageFile, "-sigfile", ours])
        } else {
            verify = try TestSupport.run(openssl, ["dgst", digest] + pssOptions + ["-verify", publicFile, "-signature", ours, messageFile])
        }
        #expect(verify.status == 0, "openssl rejected our \(scheme) signature: \(verify.stderrText)")

        // openssl → ours.
        let theirs: ProcessResult
        if scheme == .ed25519 {
            theirs = try TestSupport.run(openssl, ["pkeyutl", "-sign", "-inkey", keyFile, "-rawin", "-in", messageFile])
        } else {
            theirs = try TestSupport.run(openssl, ["dgst", digest] + pssOptions + ["-sign", keyFile, messageFile])
        }
        try #require(theirs.status == 0, "\(theirs.stderrText)")
        #expect(key.publicKey.isValidSignature(theirs.stdout, for: message, scheme: scheme))
        #expect(!key.publicKey.isValidSignature(theirs.stdout, for: message + Data([0]), scheme: scheme))
    }

    // Live peer: OpenSSL.
    @Test(.requires(.openssl)) func opensslOAEPWrapUnwraps() throws {
        let openssl = try TestSupport.path(of: .openssl)
        guard case .rsa(let rsa) = Fixtures.rsa2048.key else { Issue.record("fixture is not RSA"); return }
        let publicFile = try Fixtures.file(try Fixtures.rsa2048.key.publicKey.exported(as: .spkiPEM), "pub")
        let secret = SecureRandom.bytes(count: 32)
        let wrapped = try TestSupport.run(
            openssl,
            ["pkeyutl", "-encrypt", "-pubin", "-inkey", publicFile, "-pkeyopt", "rsa_padding_mode:oaep",
             "-pkeyopt", "rsa_oaep_md:sha256", "-pkeyopt", "rsa_mgf1_md:sha256"], stdin: secret)
        try #require(wrapped.status == 0, "\(wrapped.stderrText)")
        #expect(try rsa.unwrap(wrapped.stdout).data == secret)
        #expect(keyError { _ = try rsa.unwrap(wrapped.stdout, padding: .legacySHA1) } == .authenticationFailed)

        // And the reverse: openssl unwraps ours.
        let ours = try Fixtures.file(try rsa.publicKey.wrap(SecretBytes(secret)), "wrapped")
        let keyFile = try Fixtures.file(Data(Fixtures.rsa2048.pem.utf8), "key")
        let unwrapped = try TestSupport.run(
            openssl,
            ["pkeyutl", "-decrypt", "-inkey", keyFile, "-in", ours, "-pkeyopt", "rsa_padding_mode:oaep",
             "-pkeyopt", "rsa_oaep_md:sha256", "-pkeyopt", "rsa_mgf1_md:sha256"])
        #expect(unwrapped.status == 0 && unwrapped.stdout == secret, "\(unwrapped.stderrText)")
    }

    // Live peer: Python cryptography.
    @Test(.requires(.pythonCryptography)) func opensshLinesMatchPythonCryptography() throws {
        let python = try TestSupport.path(of: .pythonCryptography)
        for type in [KeyType.rsa2048, .p256, .p384, .p521, .ed25519] {
            let key = Fixtures.key(type).key.publicKey
            let pem = try Fixtures.file(try key.exported(as: .spkiPEM), "pub")
            let script = """
                import sys
                from cryptography.hazmat.primitives import serialization as s
                k = s.load_pem_public_key(open(sys.argv[1], 'rb').read())
                sys.stdout.write(k.public_bytes(s.Encoding.OpenSSH, s.PublicFormat.OpenSSH).decode() + '\\n')
                """
            let result = try TestSupport.run(python, ["-c", script, pem])
            let ours = try key.exported(as: .openssh)
            #expect(result.status == 0 && result.stdout == ours, "\(type): \(result.stderrText)")
            #expect(try KeyImport.publicKey(from: result.stdout).fingerprint == key.fingerprint)
        }
    }
}
