import Crypto
import Foundation
import SFTestSupport
import SecureCore
@testable import SecureKeys
@_spi(Fuzzing) @testable import SecureRSA
import Testing

/// SecureRSA's PSS verifier (any salt length) and OAEP with a label: Wycheproof's vectors through
/// the padding code itself, and live peers (OpenSSL and pyca/cryptography) through SecureKeys.
// Published vectors: skipped when Tests/Vectors is absent, a failure under CI.
@Suite(.requiresVectors) struct RSAPaddingWycheproofTests {
    /// Wycheproof's PSS files with salt lengths 0, 20 and 32 and the misc file (salt lengths
    /// 0–64, every pair of SHA-1/224/256/384/512 for the hash and MGF1). Every case whose hashes
    /// swift-crypto offers is checked with its group's exact salt length; SHA-224 (which
    /// swift-crypto does not implement) is counted apart.
    @Test(arguments: ["rsa_pss_2048_sha256_mgf1_0_test.json", "rsa_pss_2048_sha256_mgf1_32_test.json",
                      "rsa_pss_3072_sha256_mgf1_32_test.json", "rsa_pss_4096_sha512_mgf1_32_test.json", "rsa_pss_misc_test.json"])
    func pss(file: String) throws {
        let vectors = try WycheproofFile.required(file)
        var checked = 0, sha224 = 0
        for group in vectors.testGroups {
            let (n, e) = try Self.publicNumbers(group)
            let key = try RSAPublicOperation(modulus: n, exponent: e)
            let sha = try #require(group["sha"]?.string), mgf = try #require(group["mgfSha"]?.string)
            let saltLength = try #require(group["sLen"]?.int)
            for test in group.tests {
                guard let valid = Self.pssVerify(test.hex("sig"), test.hex("msg"), key: key, sha: sha, mgf: mgf, salt: .exactly(saltLength)) else {
                    sha224 += 1
                    continue
                }
                if test.isValid { #expect(valid, "tcId \(test.tcId) \(test.flags)") }
                if test.isInvalid { #expect(!valid, "tcId \(test.tcId) \(test.flags)") }
                // With the salt length recovered (`auto`), every valid signature verifies too.
                if test.isValid {
                    #expect(Self.pssVerify(test.hex("sig"), test.hex("msg"), key: key, sha: sha, mgf: mgf, salt: .any) == true)
                }
                checked += 1
            }
        }
        print("\(file): \(checked) PSS vectors checked, \(sha224) with SHA-224 not applicable (swift-crypto has no SHA-224)")
        #expect(checked >= 80)
    }

    /// Wycheproof's OAEP decryption files, labels included: valid cases give the message, invalid
    /// ones the single `decryptionFailed` error.
    @Test(arguments: ["rsa_oaep_2048_sha256_mgf1sha256_test.json", "rsa_oaep_2048_sha1_mgf1sha1_test.json", "rsa_oaep_misc_test.json"])
    func oaep(file: String) throws {
        let vectors = try WycheproofFile.required(file)
        var checked = 0, withLabel = 0, sha224 = 0
        for group in vectors.testGroups {
            let (n, e) = try Self.publicNumbers(group)
            let key = try RSAPrivateOperation(der: Data(hexString: try #require(group["privateKeyPkcs8"]?.string)), modulus: n, exponent: e)
            let sha = try #require(group["sha"]?.string), mgf = try #require(group["mgfSha"]?.string)
            for test in group.tests {
                guard let result = Self.oaepDecrypt(test.hex("ct"), label: test.hex("label"), key: key, sha: sha, mgf: mgf) else {
                    sha224 += 1
                    continue
                }
                switch result {
                case .success(let message):
                    #expect(!test.isInvalid && message.withUnsafeBytes { Data($0) } == test.hex("msg"), "tcId \(test.tcId) \(test.flags)")
                case .failure(let error):
                    #expect(!test.isValid && error == .decryptionFailed, "tcId \(test.tcId) \(test.flags)")
                }
                if !test.hex("label").isEmpty { withLabel += 1 }
                checked += 1
            }
        }
        print("\(file): \(checked) OAEP vectors checked (\(withLabel) with a label), \(sha224) with SHA-224 not applicable")
        #expect(checked >= 30)
    }

    /// The modulus and public exponent: `n` and `e` in the older file format (swift-crypto's copies),
    /// `publicKey` or `privateKey` objects with `modulus` and `publicExponent` in testvectors_v1.
    static func publicNumbers(_ group: WycheproofFile.Group) throws -> (Data, Data) {
        if let n = group["n"]?.string, let e = group["e"]?.string { return (Data(hexString: n), Data(hexString: e)) }
        let key = try #require(group["publicKey"]?.object ?? group["privateKey"]?.object)
        return (Data(hexString: try #require(key["modulus"]?.string)), Data(hexString: try #require(key["publicExponent"]?.string)))
    }

    static func pssVerify(_ signature: Data, _ message: Data, key: RSAPublicOperation, sha: String, mgf: String,
                          salt: PSSVerifier.SaltLength) -> Bool? {
        switch sha {
        case "SHA-1": pss(Insecure.SHA1.self, signature, message, key, mgf, salt)
        case "SHA-256": pss(SHA256.self, signature, message, key, mgf, salt)
        case "SHA-384": pss(SHA384.self, signature, message, key, mgf, salt)
        case "SHA-512": pss(SHA512.self, signature, message, key, mgf, salt)
        default: nil
        }
    }

    private static func pss<H: Crypto.HashFunction>(_ hash: H.Type, _ signature: Data, _ message: Data, _ key: RSAPublicOperation,
                                              _ mgf: String, _ salt: PSSVerifier.SaltLength) -> Bool? {
        let digest = H.hash(data: message)
        return switch mgf {
        case "SHA-1": PSSVerifier.isValid(signature: signature, messageHash: digest, key: key, hash: hash, mgfHash: Insecure.SHA1.self, saltLength: salt)
        case "SHA-256": PSSVerifier.isValid(signature: signature, messageHash: digest, key: key, hash: hash, mgfHash: SHA256.self, saltLength: salt)
        case "SHA-384": PSSVerifier.isValid(signature: signature, messageHash: digest, key: key, hash: hash, mgfHash: SHA384.self, saltLength: salt)
        case "SHA-512": PSSVerifier.isValid(signature: signature, messageHash: digest, key: key, hash: hash, mgfHash: SHA512.self, saltLength: salt)
        default: nil
        }
    }

    static func oaepDecrypt(_ ciphertext: Data, label: Data, key: RSAPrivateOperation, sha: String, mgf: String) -> Result<SecretBytes, RSAError>? {
        switch sha {
        case "SHA-1": oaep(Insecure.SHA1.self, ciphertext, label, key, mgf)
        case "SHA-256": oaep(SHA256.self, ciphertext, label, key, mgf)
        case "SHA-384": oaep(SHA384.self, ciphertext, label, key, mgf)
        case "SHA-512": oaep(SHA512.self, ciphertext, label, key, mgf)
        default: nil
        }
    }

    private static func oaep<H: Crypto.HashFunction>(_ hash: H.Type, _ ciphertext: Data, _ label: Data, _ key: RSAPrivateOperation,
                                               _ mgf: String) -> Result<SecretBytes, RSAError>? {
        switch mgf {
        case "SHA-1": Result { () throws(RSAError) in try OAEP.decrypt(ciphertext, label: label, key: key, hash: hash, mgfHash: Insecure.SHA1.self) }
        case "SHA-256": Result { () throws(RSAError) in try OAEP.decrypt(ciphertext, label: label, key: key, hash: hash, mgfHash: SHA256.self) }
        case "SHA-384": Result { () throws(RSAError) in try OAEP.decrypt(ciphertext, label: label, key: key, hash: hash, mgfHash: SHA384.self) }
        case "SHA-512": Result { () throws(RSAError) in try OAEP.decrypt(ciphertext, label: label, key: key, hash: hash, mgfHash: SHA512.self) }
        default: nil
        }
    }
}

@Suite struct RSAPaddingTests {
    static func operations(_ type: KeyType = .rsa2048) throws -> (RSAPublicOperation, RSAPrivateOperation) {
        guard case .rsa(let key) = Fixtures.key(type).key else { throw KeyError.wrongKeyType(expected: "RSA", found: "\(type)") }
        let (n, e) = key.publicKey.components
        let publicOperation = try RSAPublicOperation(modulus: n, exponent: e)
        let privateOperation = try key.pkcs1DERRepresentation.withUnsafeBytes { try RSAPrivateOperation(der: $0, modulus: n, exponent: e) }
        return (publicOperation, privateOperation)
    }

    /// OAEP round trips for every message length from empty to the maximum, with and without a
    /// label; one byte over the maximum is refused before any arithmetic.
    @Test func oaepRoundTripsAndLimits() throws {
        let (publicKey, privateKey) = try Self.operations()
        let maximum = OAEP.maximumMessageLength(modulusByteCount: 256, hash: SHA256.self)
        #expect(maximum == 190)
        for length in [0, 1, 16, 189, 190] {
            for label in [Data(), Data("age-encryption.org/v1/ssh-rsa".utf8)] {
                let message = SecretBytes.random(count: length)
                let ciphertext = try OAEP.encrypt(message, label: label, key: publicKey, hash: SHA256.self, mgfHash: SHA256.self)
                #expect(ciphertext.count == 256)
                #expect(try OAEP.decrypt(ciphertext, label: label, key: privateKey, hash: SHA256.self, mgfHash: SHA256.self) == message)
            }
        }
        #expect(throws: RSAError.messageTooLong(maximum: 190)) {
            try OAEP.encrypt(SecretBytes.random(count: 191), label: Data(), key: publicKey, hash: SHA256.self, mgfHash: SHA256.self)
        }
    }

    /// Wrong label, wrong hash, wrong key, every byte flipped, every truncation, a number not below
    /// n: each is the same `decryptionFailed`.
    @Test func oaepFailuresAreOneError() throws {
        let (publicKey, privateKey) = try Self.operations()
        let (_, otherKey) = try Self.operations(.rsa3072)
        let label = Data("label".utf8)
        let ciphertext = try OAEP.encrypt(SecretBytes(Data("secret".utf8)), label: label, key: publicKey, hash: SHA256.self, mgfHash: SHA256.self)
        let decrypt = { (c: Data, l: Data) throws(RSAError) in _ = try OAEP.decrypt(c, label: l, key: privateKey, hash: SHA256.self, mgfHash: SHA256.self) }
        #expect(throws: RSAError.decryptionFailed) { try decrypt(ciphertext, Data()) }
        #expect(throws: RSAError.decryptionFailed) { try decrypt(ciphertext, Data("labe1".utf8)) }
        #expect(throws: RSAError.decryptionFailed) { _ = try OAEP.decrypt(ciphertext, label: label, key: privateKey, hash: SHA384.self, mgfHash: SHA256.self) }
        #expect(throws: RSAError.decryptionFailed) { _ = try OAEP.decrypt(ciphertext, label: label, key: privateKey, hash: SHA256.self, mgfHash: SHA1Hash.self) }
        #expect(throws: RSAError.decryptionFailed) { _ = try OAEP.decrypt(ciphertext, label: label, key: otherKey, hash: SHA256.self, mgfHash: SHA256.self) }
        for index in ciphertext.indices {
            var flipped = ciphertext
            flipped[index] ^= 0x80
            #expect(throws: RSAError.decryptionFailed, "byte \(index)") { try decrypt(flipped, label) }
        }
        for length in [0, 1, 255, 257] {
            #expect(throws: RSAError.decryptionFailed) { try decrypt(Data((ciphertext + ciphertext).prefix(length)), label) }
        }
        #expect(throws: RSAError.decryptionFailed) { try decrypt(Data(repeating: 0xff, count: 256), label) }
        #expect(throws: RSAError.decryptionFailed) { try decrypt(Data(repeating: 0, count: 256), label) }
    }

    /// The constant-time padding check alone, on encoded messages built by hand: each defect makes
    /// `good` zero, and only the well-formed encoding gives all ones at the right offset.
    @Test func unpadFindsEachDefect() {
        let labelHash = Array(SHA256.hash(data: Data()))
        func encode(_ db: [UInt8], first: UInt8 = 0) -> [UInt8] {
            // EM = first ‖ maskedSeed ‖ maskedDB with a zero seed.
            var em = [first] + [UInt8](repeating: 0, count: 32) + db
            em.withUnsafeMutableBytes { buffer in
                let seed = UnsafeMutableRawBufferPointer(rebasing: buffer[1...32])
                let maskedDB = UnsafeMutableRawBufferPointer(rebasing: buffer[33...])
                MGF1.xorMask(SHA256.self, seed: UnsafeRawBufferPointer(seed), into: maskedDB)
                MGF1.xorMask(SHA256.self, seed: UnsafeRawBufferPointer(maskedDB), into: seed)
            }
            return em
        }
        func check(_ em: [UInt8]) -> (UInt, Int) {
            var copy = em
            return copy.withUnsafeMutableBytes { OAEP.unpad($0, labelHash: labelHash, mgfHash: SHA256.self) }
        }
        let ps = [UInt8](repeating: 0, count: 20)
        let good = check(encode(labelHash + ps + [1, 0xAA, 0xBB]))
        #expect(good.0 == UInt.max && good.1 == 1 + 32 + 32 + 20 + 1)
        #expect(check(encode(labelHash + ps + [1, 0xAA], first: 1)).0 == 0)                     // Y ≠ 0
        #expect(check(encode([labelHash[0] ^ 1] + labelHash.dropFirst() + ps + [1, 0xAA])).0 == 0)  // lHash differs
        #expect(check(encode(labelHash + ps + [2, 0xAA])).0 == 0)                                 // 0x02 separator
        #expect(check(encode(labelHash + [0, 7] + ps + [1, 0xAA])).0 == 0)                        // non-zero in PS
        #expect(check(encode(labelHash + ps + [0, 0])).0 == 0)                                    // no separator
        #expect(check(encode(labelHash + [1])).0 == UInt.max)                                     // empty message
    }

    /// A salt length longer than the key leaves room for is simply invalid, however long: the room
    /// check subtracts, where adding `.exactly(Int.max)` to the hash length overflowed and trapped.
    @Test func pssSaltLengthsBeyondTheKeyAreInvalid() throws {
        let (publicKey, _) = try Self.operations()
        let message = Data("salt lengths".utf8)
        let signature = try Fixtures.key(.rsa2048).key.signature(for: message, scheme: .rsaPSS)
        let digest = SHA256.hash(data: message)
        func verify(_ salt: PSSVerifier.SaltLength) -> Bool {
            PSSVerifier.isValid(signature: signature, messageHash: digest, key: publicKey, hash: SHA256.self, mgfHash: SHA256.self,
                                saltLength: salt)
        }
        #expect(verify(.exactly(32)) && verify(.any))
        // emLen = 256: room for a salt of 256 − 32 − 2 = 222 bytes at most.
        for length in [223, Int.max - 33, Int.max - 1, Int.max, -1, Int.min] {
            #expect(!verify(.exactly(length)), "salt length \(length)")
        }
    }

    /// The public operation refuses inputs of the wrong length or not below n, and keys it cannot use.
    @Test func publicOperationBounds() throws {
        let (publicKey, _) = try Self.operations()
        #expect(throws: RSAError.inputOutOfRange) { try publicKey.apply(Data(repeating: 0xff, count: 256)) }
        #expect(throws: RSAError.inputOutOfRange) { try publicKey.apply(Data(repeating: 1, count: 255)) }
        #expect(try publicKey.apply(Data(repeating: 0, count: 255) + [1]) == [UInt8](repeating: 0, count: 255) + [1])
        let modulus = Data([0xc1]) + Data(repeating: 0x5b, count: 255)
        #expect(throws: RSAError.self) { try RSAPublicOperation(modulus: modulus.dropLast() + [0x5a], exponent: [1, 0, 1]) }  // even n
        #expect(throws: RSAError.self) { try RSAPublicOperation(modulus: modulus, exponent: [1]) }
        #expect(throws: RSAError.self) { try RSAPublicOperation(modulus: modulus, exponent: [2]) }
        #expect(throws: RSAError.self) { try RSAPublicOperation(modulus: modulus, exponent: Data(repeating: 0xff, count: 9)) }
        #expect(throws: RSAError.self) { try RSAPublicOperation(modulus: Data([0xc1]) + Data(repeating: 0x5b, count: 2048), exponent: [3]) }
        #expect(throws: RSAError.self) { try RSAPublicOperation(modulus: [0x5b], exponent: [3]) }
    }
}

private typealias SHA1Hash = Insecure.SHA1

/// Live peers: signatures made by OpenSSL with every salt-length setting and by pyca with
/// `PSS.MAX_LENGTH`, for RSA 2048/3072/4096 and SHA-256/384/512, verify through SecureKeys' API;
/// the same signature over another message does not.
@Suite struct RSAPSSPeerTests {
    static let saltLengths = ["digest", "max", "auto", "0", "20"]

    // Live peer: OpenSSL signs.
    @Test(.requires(.openssl), arguments: [KeyType.rsa2048, .rsa3072, .rsa4096], [("sha256", SignatureScheme.rsaPSS),
          ("sha384", .rsaPSSSHA384), ("sha512", .rsaPSSSHA512)])
    func opensslSaltLengths(type: KeyType, hash: (name: String, scheme: SignatureScheme)) throws {
        let openssl = try TestSupport.path(of: .openssl)
        let fixture = Fixtures.key(type)
        let keyFile = try Fixtures.file(Data(fixture.pem.utf8), "pss-key")
        let message = Data("pss from openssl \(type)".utf8)
        var verified = 0
        for salt in Self.saltLengths {
            let signed = try TestSupport.run(openssl, [
                "dgst", "-\(hash.name)", "-sign", keyFile, "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:\(salt)",
            ], stdin: message)
            try #require(signed.status == 0, "\(signed.stderrText)")
            #expect(fixture.key.publicKey.isValidSignature(signed.stdout, for: message, scheme: hash.scheme), "saltlen \(salt)")
            #expect(!fixture.key.publicKey.isValidSignature(signed.stdout, for: message + [0], scheme: hash.scheme), "saltlen \(salt)")
            var tampered = signed.stdout
            tampered[tampered.count / 2] ^= 1
            #expect(!fixture.key.publicKey.isValidSignature(tampered, for: message, scheme: hash.scheme), "saltlen \(salt)")
            // A signature over SHA-256 does not verify as SHA-512 and so on.
            for other in [SignatureScheme.rsaPSS, .rsaPSSSHA384, .rsaPSSSHA512] where other != hash.scheme {
                #expect(!fixture.key.publicKey.isValidSignature(signed.stdout, for: message, scheme: other))
            }
            verified += 1
        }
        #expect(verified == Self.saltLengths.count)
        // And our own signatures verify with OpenSSL (salt = digest length).
        let ours = try fixture.key.signature(for: message, scheme: hash.scheme)
        let publicFile = try Fixtures.file(try fixture.key.publicKey.exported(as: .spkiPEM), "pss-pub")
        let signatureFile = try Fixtures.file(ours, "pss-sig")
        let check = try TestSupport.run(openssl, ["dgst", "-\(hash.name)", "-verify", publicFile, "-sigopt", "rsa_padding_mode:pss",
                                                  "-sigopt", "rsa_pss_saltlen:auto", "-signature", signatureFile], stdin: message)
        #expect(check.status == 0, "\(check.stderrText)")
    }

    // Live peer: pyca/cryptography signs with PSS.MAX_LENGTH and PSS.AUTO-compatible lengths.
    @Test(.requires(.pythonCryptography), arguments: [KeyType.rsa2048, .rsa4096])
    func pycaMaxLength(type: KeyType) throws {
        let python = try TestSupport.path(of: .pythonCryptography)
        let fixture = Fixtures.key(type)
        let keyFile = try Fixtures.file(Data(fixture.pem.utf8), "pyca-key")
        let script = """
            import sys
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import padding
            key = serialization.load_pem_private_key(open(sys.argv[1], 'rb').read(), None)
            h = {'sha256': hashes.SHA256(), 'sha384': hashes.SHA384(), 'sha512': hashes.SHA512()}[sys.argv[2]]
            pad = padding.PSS(mgf=padding.MGF1(h), salt_length=padding.PSS.MAX_LENGTH)
            sys.stdout.buffer.write(key.sign(sys.stdin.buffer.read(), pad, h))
            """
        let message = Data("pss from pyca".utf8)
        for (name, scheme) in [("sha256", SignatureScheme.rsaPSS), ("sha384", .rsaPSSSHA384), ("sha512", .rsaPSSSHA512)] {
            let signed = try TestSupport.run(python, ["-c", script, keyFile, name], stdin: message)
            try #require(signed.status == 0, "\(signed.stderrText)")
            #expect(fixture.key.publicKey.isValidSignature(signed.stdout, for: message, scheme: scheme), "\(name)")
            #expect(!fixture.key.publicKey.isValidSignature(signed.stdout, for: message + [1], scheme: scheme), "\(name)")
        }
    }

    /// OAEP with a label against pyca/cryptography, both directions (the padding age's ssh-rsa uses).
    // Live peer: pyca/cryptography encrypts and decrypts RSA-OAEP-SHA256 with a label.
    @Test(.requires(.pythonCryptography)) func oaepWithLabelAgainstPyca() throws {
        let python = try TestSupport.path(of: .pythonCryptography)
        let fixture = Fixtures.key(.rsa2048)
        guard case .rsa(let rsa) = fixture.key else { return }
        let keyFile = try Fixtures.file(Data(fixture.pem.utf8), "oaep-key")
        let script = """
            import sys
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import padding
            key = serialization.load_pem_private_key(open(sys.argv[1], 'rb').read(), None)
            pad = padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=sys.argv[3].encode())
            data = sys.stdin.buffer.read()
            out = key.public_key().encrypt(data, pad) if sys.argv[2] == 'e' else key.decrypt(data, pad)
            sys.stdout.buffer.write(out)
            """
        let label = "age-encryption.org/v1/ssh-rsa"
        let (n, e) = rsa.publicKey.components
        let publicOperation = try RSAPublicOperation(modulus: n, exponent: e)
        let privateOperation = try rsa.pkcs1DERRepresentation.withUnsafeBytes { try RSAPrivateOperation(der: $0, modulus: n, exponent: e) }
        let secret = SecretBytes.random(count: 16)
        let byPyca = try TestSupport.run(python, ["-c", script, keyFile, "e", label], stdin: secret.withUnsafeBytes { Data($0) })
        try #require(byPyca.status == 0, "\(byPyca.stderrText)")
        #expect(try OAEP.decrypt(byPyca.stdout, label: Data(label.utf8), key: privateOperation, hash: SHA256.self, mgfHash: SHA256.self) == secret)
        let ours = try OAEP.encrypt(secret, label: Data(label.utf8), key: publicOperation, hash: SHA256.self, mgfHash: SHA256.self)
        let opened = try TestSupport.run(python, ["-c", script, keyFile, "d", label], stdin: ours)
        #expect(opened.status == 0 && opened.stdout == secret.withUnsafeBytes { Data($0) }, "\(opened.stderrText)")
        let wrongLabel = try TestSupport.run(python, ["-c", script, keyFile, "d", label + "x"], stdin: ours)
        #expect(wrongLabel.status != 0)
    }
}
