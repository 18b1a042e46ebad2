import Foundation
import SFTestSupport
import SecureCore
import SecureKeys
import Testing

/// Wycheproof vectors run through SecureKeys' own API (key import, verify, unwrap, key agreement).
// Published vectors: every test here is skipped when Tests/Vectors is absent, a failure under CI.
@Suite(.requiresVectors) struct WycheproofTests {
    @Test(arguments: [("rsa_oaep_2048_sha256_mgf1sha256_test.json", RSAOAEPPadding.sha256), ("rsa_oaep_2048_sha1_mgf1sha1_test.json", .legacySHA1)])
    func rsaOAEP(file: String, padding: RSAOAEPPadding) throws {
        let vectors = try WycheproofFile.required(file)
        var checked = 0, skippedLabels = 0
        for group in vectors.testGroups {
            let pem = try #require(group["privateKeyPem"]?.string)
            guard case .rsa(let key) = try KeyImport.privateKey(from: Data(pem.utf8)) else { Issue.record("not RSA"); continue }
            for test in group.tests {
                // Our wrapping API always uses the empty label (the only one swift-crypto supports).
                guard test.hex("label").isEmpty else {
                    skippedLabels += 1
                    continue
                }
                let result = Result { try key.unwrap(test.hex("ct"), padding: padding) }
                switch result {
                case .success(let plaintext):
                    #expect(!test.isInvalid && plaintext.data == test.hex("msg"), "tcId \(test.tcId)")
                case .failure(let error):
                    #expect(!test.isValid && error as? KeyError == .authenticationFailed, "tcId \(test.tcId): \(error)")
                }
                checked += 1
            }
        }
        #expect(checked > 20)
        print("\(file): \(checked) vectors checked, \(skippedLabels) with a non-empty OAEP label not applicable")
    }

    @Test(arguments: [("rsa_pss_2048_sha256_mgf1_32_test.json", SignatureScheme.rsaPSS), ("rsa_signature_2048_sha256_test.json", .rsaPKCS1v15),
                      ("ecdsa_secp256r1_sha256_test.json", .ecdsaDER), ("ecdsa_secp256r1_sha256_p1363_test.json", .ecdsaRaw),
                      ("ed25519_test.json", .ed25519)])
    func signatures(file: String, scheme: SignatureScheme) throws {
        let vectors = try WycheproofFile.required(file)
        var checked = 0
        for group in vectors.testGroups {
            let der = try #require(group["publicKeyDer"]?.string)
            let key = try AsymmetricPublicKey(spkiDERRepresentation: Data(hexString: der))
            for test in group.tests {
                let valid = key.isValidSignature(test.hex("sig"), for: test.hex("msg"), scheme: scheme)
                // The API recovers the PSS salt length (as OpenSSL's `auto`), so a genuine signature
                // with another salt length ("s_len changed to N") is valid here by design; with the
                // group's exact salt length it is refused (RSAPaddingWycheproofTests).
                let otherSaltLength = test["comment"]?.string?.hasPrefix("s_len changed") == true
                if test.isValid || otherSaltLength { #expect(valid, "tcId \(test.tcId) \(test.flags)") }
                if test.isInvalid, !otherSaltLength { #expect(!valid, "tcId \(test.tcId) \(test.flags)") }
                checked += 1
            }
        }
        #expect(checked > 100)
    }

    @Test func x25519() throws {
        // An all-zero output (a low-order public key) is refused: Wycheproof marks those cases
        // acceptable either way, so they are checked to fail apart.
        var zeroOutputs = 0
        try checkAgreement("x25519_test.json") { test in
            let own = try KeyImport.privateKey(from: Self.x25519PKCS8(test.hex("private")))
            let peer = try KeyImport.rawPublicKey(test.hex("public"), type: .x25519)
            if ConstantTime.isZero(test.hex("shared")) {
                zeroOutputs += 1
                #expect(throws: KeyError.self, "tcId \(test.tcId)") { try own.sharedSecret(with: peer) }
            }
            return try own.sharedSecret(with: peer).data
        }
        #expect(zeroOutputs > 5)
    }

    @Test func ecdhP256() throws {
        try checkAgreement("ecdh_secp256r1_test.json") { test in
            let peer = try AsymmetricPublicKey(spkiDERRepresentation: test.hex("public"))
            var scalar = test.hex("private")
            while scalar.count > 32, scalar.first == 0 { scalar.removeFirst() }
            scalar = Data(count: 32 - scalar.count) + scalar
            let own = try KeyImport.rawPrivateKey(SecretBytes(scalar), type: .p256)
            return try own.sharedSecret(with: peer).data
        }
    }

    /// Runs every key-agreement vector of `file` through `derive`: a valid case must give the
    /// expected shared secret, an invalid one must fail; acceptable cases may do either.
    private func checkAgreement(_ file: String, derive: (WycheproofFile.Test) throws -> Data) throws {
        let vectors = try WycheproofFile.required(file)
        var checked = 0
        for test in vectors.testGroups.flatMap(\.tests) {
            switch Result(catching: { try derive(test) }) {
            case .success(let shared):
                #expect(!test.isInvalid && shared == test.hex("shared"), "tcId \(test.tcId) \(test.flags)")
            case .failure(let error):
                #expect(!test.isValid, "tcId \(test.tcId) \(test.flags): \(error)")
            }
            checked += 1
        }
        #expect(checked > 500)
    }

    static func x25519PKCS8(_ scalar: Data) -> Data {
        Data([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20]) + scalar
    }
}
