import Foundation
import SFTestSupport
import Testing

@testable import SecureCore

/// Published known-answer vectors, run through SecureCore's own API.
@Suite struct KnownAnswerTests {
    /// RFC 6070 PBKDF2-HMAC-SHA1 (the 16,777,216-round case is omitted: it adds a minute and no coverage).
    @Test(arguments: [
        ("password", "salt", 1, 20, "0c60c80f961f0e71f3a9b524af6012062fe037a6"),
        ("password", "salt", 2, 20, "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957"),
        ("password", "salt", 4096, 20, "4b007901b765489abead49d926f721d065a429c1"),
        ("passwordPASSWORDpassword", "saltSALTsaltSALTsaltSALTsaltSALTsalt", 4096, 25,
         "3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038"),
        ("pass\0word", "sa\0lt", 4096, 16, "56fa6aa75548099dcc37d7f03425e0c3"),
    ])
    func rfc6070(password: String, salt: String, rounds: Int, length: Int, expected: String) throws {
        let key = try PasswordKDF.pbkdf2(hash: HashFunction.Insecure.sha1, rounds: UInt32(rounds))
            .deriveKey(from: Data(password.utf8), salt: Data(salt.utf8), outputByteCount: length)
        #expect(key.withUnsafeBytes { Hex.encode($0) } == expected)
    }

    /// RFC 7914 §12 scrypt vectors (the N=2^20 case uses 1 GiB and a few seconds).
    @Test(arguments: [
        ("", "", 4, 1, 1, "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"),
        ("password", "NaCl", 10, 8, 16, "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"),
        ("pleaseletmein", "SodiumChloride", 14, 8, 1, "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"),
        ("pleaseletmein", "SodiumChloride", 20, 8, 1, "2101cb9b6a511aaeaddbbe09cf70f881ec568d574a2ffd4dabe5ee9820adaa478e56fd8f4ba5d09ffa1c6d927c40f4c337304049e8a952fbcbf45c6fa77a41a4"),
    ])
    func rfc7914(password: String, salt: String, logN: UInt8, r: UInt32, p: UInt32, expected: String) throws {
        let key = try PasswordKDF.scrypt(logN: logN, r: r, p: p)
            .deriveKey(from: Data(password.utf8), salt: Data(salt.utf8), outputByteCount: 64)
        #expect(key.withUnsafeBytes { Hex.encode($0) } == expected)
    }

    // Published vectors: skipped when Tests/Vectors is absent, a failure under CI.
    @Test(.requiresVectors)
    func wycheproofPBKDF2SHA256() throws {
        let file = try WycheproofFile.required("pbkdf2_hmacsha256_test.json")
        var checked = 0
        for test in file.testGroups.flatMap(\.tests) {
            let kdf = PasswordKDF.pbkdf2(hash: .sha256, rounds: UInt32(test["iterationCount"]!.int!))
            let derived = try? kdf.deriveKey(
                from: test.hex("password"), salt: test.hex("salt"), outputByteCount: test["dkLen"]!.int!, limits: .unlimited)
            if test.isValid {
                #expect(derived?.withUnsafeBytes { Data($0) } == test.hex("dk"), "tcId \(test.tcId)")
            } else {
                #expect(derived?.withUnsafeBytes { Data($0) } != test.hex("dk"), "tcId \(test.tcId)")
            }
            checked += 1
        }
        #expect(checked > 0)
    }

    // Published vectors: skipped when Tests/Vectors is absent, a failure under CI.
    @Test(.requiresVectors)
    func wycheproofHMACSHA256() throws {
        let file = try WycheproofFile.required("hmac_sha256_test.json")
        var checked = 0
        // SecureCore verifies full-length tags only; truncated-tag groups are outside its API.
        for group in file.testGroups where group["tagSize"]?.int == 256 {
            for test in group.tests {
                let valid = MessageAuthentication.isValid(test.hex("tag"), for: test.hex("msg"), key: test.hex("key"))
                #expect(valid == test.isValid, "tcId \(test.tcId)")
                checked += 1
            }
        }
        #expect(checked > 0)
    }

    // Published vectors: skipped when Tests/Vectors is absent, a failure under CI.
    @Test(.requiresVectors)
    func wycheproofHKDFSHA256() throws {
        let file = try WycheproofFile.required("hkdf_sha256_test.json")
        for test in file.testGroups.flatMap(\.tests) {
            let okm = try? KeyDerivation.hkdf(
                inputKeyMaterial: test.hex("ikm"), salt: test.hex("salt"), info: test.hex("info"),
                outputByteCount: test["size"]!.int!)
            if test.isValid {
                #expect(okm?.withUnsafeBytes { Data($0) } == test.hex("okm"), "tcId \(test.tcId)")
            } else {
                #expect(okm == nil, "tcId \(test.tcId) must be rejected")
            }
        }
    }

    /// The AEAD layer under the envelope, with the parameters the native formats use
    /// (256-bit keys, 96-bit nonces, 128-bit tags).
    // Published vectors: skipped when Tests/Vectors is absent, a failure under CI.
    @Test(.requiresVectors,
        arguments: [("aes_gcm_test.json", Envelope.Algorithm.aes256GCM), ("chacha20_poly1305_test.json", .chaCha20Poly1305)])
    func wycheproofAEAD(file name: String, algorithm: Envelope.Algorithm) throws {
        let file = try WycheproofFile.required(name)
        var checked = 0
        for group in file.testGroups
        where group["keySize"]?.int == 256 && group["ivSize"]?.int == 96 && group["tagSize"]?.int == 128 {
            for test in group.tests {
                let key = SecretBytes(test.hex("key")).symmetricKey
                let sealed = test.hex("ct") + test.hex("tag")
                let opened = try? AEAD.open(algorithm, sealed, key: key, nonce: test.hex("iv"), authenticating: test.hex("aad"))
                if test.isValid {
                    #expect(opened == test.hex("msg"), "tcId \(test.tcId)")
                    let iv = test.hex("iv")
                    let resealed = try iv.withUnsafeBytes { nonce in
                        try AEAD.seal(algorithm, test.hex("msg"), key: key, nonce: nonce, authenticating: test.hex("aad"))
                    }
                    #expect(resealed == iv + sealed, "tcId \(test.tcId)")
                } else {
                    #expect(opened == nil, "tcId \(test.tcId) must be rejected")
                }
                checked += 1
            }
        }
        #expect(checked > 50)
    }
}
