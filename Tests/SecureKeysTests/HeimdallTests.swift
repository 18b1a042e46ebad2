import Foundation
import SFTestSupport
import SecureCore
import SecureKeys
import Testing

@Suite struct HeimdallTests {
    static func rsa(_ type: KeyType) -> (pem: String, key: RSAPrivateKey) {
        let (pem, key) = Fixtures.key(type)
        guard case .rsa(let rsa) = key else { fatalError("not RSA") }
        return (pem, rsa)
    }

    @Test(arguments: [KeyType.rsa1024, .rsa2048, .rsa4096])
    func roundTripAndLayout(type: KeyType) throws {
        let key = Self.rsa(type).key
        let message = Data("Heimdall payload".utf8)
        let payload = try Heimdall.encrypt(message, to: key.publicKey)
        #expect(payload.count == key.publicKey.modulusByteCount + 32)
        #expect(try Heimdall.decrypt(payload, with: key) == message)
        // The wrapped part is RSA-OAEP-SHA1 of a 32-byte AES key and a 16-byte IV.
        #expect(try key.unwrap(payload.prefix(key.publicKey.modulusByteCount), padding: .legacySHA1).count == 48)
        let text = try Heimdall.encrypt("Grüße", to: key.publicKey, urlEncode: true)
        #expect(!text.contains("/") && !text.contains("+"))
        #expect(try Heimdall.decrypt(text, with: key) == "Grüße")
        let signature = try Heimdall.sign("signed", with: key, urlEncode: true)
        #expect(Heimdall.verify(base64: signature, for: "signed", with: key.publicKey))
        #expect(!Heimdall.verify(base64: signature, for: "signed!", with: key.publicKey))
    }

    @Test func damagedPayloadsAreRejected() throws {
        let key = Self.rsa(.rsa2048).key
        let payload = try Heimdall.encrypt(Data("secret".utf8), to: key.publicKey)
        let failed: (KeyError?) -> Bool = { if case .legacyDecryptionFailed = $0 { true } else { false } }
        for index in [0, 100, 255] {
            var tampered = payload
            tampered[index] ^= 0x01
            #expect(failed(keyError { _ = try Heimdall.decrypt(tampered, with: key) }), "byte \(index)")
        }
        for length in [0, 16, 255, 256, 257, 271] {
            #expect(failed(keyError { _ = try Heimdall.decrypt(payload.prefix(length), with: key) }), "length \(length)")
        }
        guard case .rsa(let other) = Fixtures.otherRSA2048 else { return }
        #expect(failed(keyError { _ = try Heimdall.decrypt(payload, with: other) }))
        #expect(keyError { _ = try Heimdall.decodeBase64("a*b=") } == .malformedBase64)
    }

    /// Issue 12, item 18: the length of the text is checked before any decoding.
    @Test func textOfImpossibleLengthIsRefusedBeforeDecoding() throws {
        let key = Self.rsa(.rsa2048).key
        let text = try Heimdall.encrypt("secret", to: key.publicKey)
        #expect(try Heimdall.decrypt(text + "\n", with: key) == "secret")
        let failed: (KeyError?) -> Bool = { if case .legacyDecryptionFailed = $0 { true } else { false } }
        // Too short for the wrapped key and one block; whole but misaligned blocks (one byte more).
        #expect(failed(keyError { _ = try Heimdall.decrypt(String(text.prefix(300)), with: key) }))
        let misaligned = Heimdall.encodeBase64(Data(repeating: 7, count: 256 + 17), urlSafe: false)
        #expect(failed(keyError { _ = try Heimdall.decodePayload(misaligned, for: key.publicKey) }))
        // Not a multiple of 4 characters: not base64, whatever the characters are.
        #expect(keyError { _ = try Heimdall.decodePayload(text + "A", for: key.publicKey) } == .malformedBase64)
        // 64 MiB of characters that are not base64: a typed error, not a crash.
        let huge = String(repeating: "*", count: 64 << 20) + "A"
        #expect(keyError { _ = try Heimdall.decodePayload(huge, for: key.publicKey) } == .malformedBase64)

        let signature = try Heimdall.sign("signed", with: key)
        #expect(Heimdall.verify(base64: signature + "\n", for: "signed", with: key.publicKey))
        // A valid signature followed by more base64 is longer than any signature of this key.
        #expect(!Heimdall.verify(base64: signature + String(repeating: "AAAA", count: 1 << 20), for: "signed", with: key.publicKey))
        // A shorter key's signature is the wrong length for this one.
        let short = try Heimdall.sign("signed", with: Self.rsa(.rsa1024).key)
        #expect(!Heimdall.verify(base64: short, for: "signed", with: key.publicKey))
    }

    @Test func base64Variants() throws {
        let bytes = Data([0xfb, 0xff, 0xfe, 0x3e])
        #expect(Heimdall.encodeBase64(bytes, urlSafe: false) == "+//+Pg==")
        #expect(Heimdall.encodeBase64(bytes, urlSafe: true) == "-__-Pg==")
        #expect(try Heimdall.decodeBase64("-__-Pg==") == bytes)
        #expect(try Heimdall.decodeBase64("+//+Pg==") == bytes)
    }

    // Live peer: Python cryptography, running the Heimdall format independently.
    @Test(.requires(.pythonCryptography), arguments: [KeyType.rsa1024, .rsa2048, .rsa4096])
    func interoperatesWithPythonReimplementation(type: KeyType) throws {
        let python = try TestSupport.path(of: .pythonCryptography)
        let (pem, key) = Self.rsa(type)
        let script = peerScript("heimdall.py")
        let privateFile = try Fixtures.file(Data(pem.utf8), "key")
        let publicFile = try Fixtures.file(try AsymmetricPublicKey.rsa(key.publicKey).exported(as: .spkiPEM), "pub")
        let message = "Heimdall across platforms \(type) ✓"
        for url in [false, true] {
            let flag = url ? ["--url"] : []
            // Python encrypts, we decrypt.
            let theirs = try TestSupport.run(python, [script, "encrypt", publicFile] + flag, stdin: Data(message.utf8))
            try #require(theirs.status == 0, "\(theirs.stderrText)")
            #expect(try Heimdall.decrypt(theirs.stdoutText, with: key) == message)
            // We encrypt, Python decrypts.
            let ours = try Heimdall.encrypt(message, to: key.publicKey, urlEncode: url)
            let decrypted = try TestSupport.run(python, [script, "decrypt", privateFile], stdin: Data(ours.utf8))
            #expect(decrypted.status == 0 && decrypted.stdoutText == message, "\(decrypted.stderrText)")
            // Python signs, we verify.
            let signature = try TestSupport.run(python, [script, "sign", privateFile] + flag, stdin: Data(message.utf8))
            #expect(Heimdall.verify(base64: signature.stdoutText, for: message, with: key.publicKey))
            // We sign, Python verifies.
            let signatureFile = try Fixtures.file(Data(try Heimdall.sign(message, with: key, urlEncode: url).utf8), "sig")
            let verified = try TestSupport.run(python, [script, "verify", publicFile, signatureFile], stdin: Data(message.utf8))
            #expect(verified.status == 0, "\(verified.stderrText)")
        }
    }
}
