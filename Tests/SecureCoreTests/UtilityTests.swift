import Crypto
import Foundation
import SFTestSupport
import Testing

@testable import SecureCore

@Suite struct RandomTests {
    @Test func exactLengthsIncludingNonMultiplesOfFour() {
        for n in [0, 1, 2, 3, 5, 7, 33, 4097, 10_001] { #expect(SecureRandom.bytes(count: n).count == n) }
        #expect(SecureRandom.bytes(count: 32) != SecureRandom.bytes(count: 32))
    }

    @Test func stringsUseTheWholeAlphabetUniformly() throws {
        let sample = SecureRandom.string(length: 62_000)
        var counts = [Character: Int]()
        for c in sample { counts[c, default: 0] += 1 }
        #expect(counts.count == 62)
        #expect(counts["z"] != nil && counts["Z"] != nil && counts["9"] != nil)
        // Each count is Binomial(62000, 1/62): mean 1000, sd ≈ 31. ±200 is over 6 sd.
        #expect(counts.values.allSatisfy { (800...1200).contains($0) })
        let custom = try SecureRandom.Alphabet("ab")
        #expect(Set(SecureRandom.string(length: 100, alphabet: custom)) == ["a", "b"])
        #expect(throws: SecureCoreError.self) { try SecureRandom.Alphabet("") }
    }

    @Test func integersStayInRange() {
        for _ in 0..<1000 { #expect((3...5).contains(SecureRandom.integer(in: 3...5))) }
        var seen = Set<Int>()
        for _ in 0..<1000 { seen.insert(SecureRandom.integer(in: 0..<10)) }
        #expect(seen.count == 10)
    }
}

@Suite struct EncodingTests {
    @Test func hex() throws {
        #expect(Hex.encode(Data([0x00, 0xab, 0xff])) == "00abff")
        #expect(try Hex.decode("00ABff") == Data([0x00, 0xab, 0xff]))
        expectError(.malformedEncoding("hex has an odd number of digits")) { _ = try Hex.decode("abc") }
        expectError(.malformedEncoding("invalid hex digit at offset 0")) { _ = try Hex.decode("zz") }
    }

    @Test func base64Strict() throws {
        #expect(try Base64.decode("Zm9vYg==") == Data("foob".utf8))
        let badInputs: [String] = ["Zm9vYg", "Zm9vYh==", "Zm9v Yg==", "Zm9vYg==\n", "Zm9vYg==="]
        for bad in badInputs {
            #expect(throws: SecureCoreError.self, "\(bad)") { try Base64.decode(bad) }
        }
        #expect(Base64URL.encode(Data([0xfb, 0xff])) == "-_8")
        #expect(try Base64URL.decode("-_8") == Data([0xfb, 0xff]))
        for bad in ["-_8=", "+/8", "-_9", "A"] {
            #expect(throws: SecureCoreError.self, "\(bad)") { try Base64URL.decode(bad) }
        }
    }

    @Test func pemStrictRoundTrip() throws {
        let der = SecureRandom.bytes(count: 100)
        let text = PEM.encode(der, label: "PRIVATE KEY")
        #expect(text.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(text.split(separator: "\n")[1].count == 64)
        #expect(try PEM.decode(text) == PEM.Document(label: "PRIVATE KEY", der: der))
        #expect(try PEM.decode(text.replacingOccurrences(of: "\n", with: "\r\n"), expectedLabel: "PRIVATE KEY").der == der)
        let lines = text.split(separator: "\n").map(String.init)
        let shortLine = ([lines[0], String(lines[1].dropLast()), String(lines[1].suffix(1)) + lines[2]] + Array(lines[3...]))
            .joined(separator: "\n")
        let malformed: [String] = [
            text.replacingOccurrences(of: "END PRIVATE", with: "END PUBLIC"),
            shortLine,
            text.replacingOccurrences(of: "-----BEGIN", with: "----BEGIN"),
            lines.dropLast().joined(separator: "\n"),
            text.replacingOccurrences(of: lines[1], with: String(lines[1].dropLast()) + "!"),
            "-----BEGIN  X-----\nAAAA\n-----END  X-----\n",
        ]
        for bad in malformed {
            #expect(throws: SecureCoreError.self) { try PEM.decode(bad) }
        }
        #expect(throws: SecureCoreError.self) { try PEM.decode(text, expectedLabel: "PUBLIC KEY") }
    }

    /// Blank lines around the block were dropped one `removeFirst` at a time, each moving every
    /// line after it: a million of them meant about 5 × 10^11 moves.
    @Test(.hangBackstop) func pemAfterAMillionBlankLines() throws {
        let der = Data((0..<100).map { UInt8($0) })
        let blank = String(repeating: "\n", count: 1_000_000)
        #expect(try PEM.decode(blank + PEM.encode(der, label: "X") + blank).der == der)
    }
}

@Suite struct HashingTests {
    @Test func knownDigests() throws {
        let abc = Data("abc".utf8)
        #expect(Hex.encode(Hashing.hash(abc)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Hex.encode(Hashing.hash(abc, with: .sha384)).hasPrefix("cb00753f45a35e8b"))
        #expect(Hex.encode(Hashing.hash(abc, with: .sha512)).hasPrefix("ddaf35a193617aba"))
        #expect(Hex.encode(Hashing.hash(abc, with: HashFunction.Insecure.sha1)) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Hex.encode(Hashing.hash(abc, with: HashFunction.Insecure.md5)) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(HashFunction(name: "SHA-256") == .sha256)
        #expect(HashFunction.Insecure.md5.isInsecure)
    }

    @Test func incrementalEqualsOneShotAndFiles() throws {
        let data = SecureRandom.bytes(count: 3_000_000)
        var hasher = IncrementalHasher(.sha512)
        for start in stride(from: 0, to: data.count, by: 77_777) { hasher.update(data[start..<min(start + 77_777, data.count)]) }
        #expect(hasher.finalize() == Hashing.hash(data, with: .sha512))
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sf-hash-\(UUID())")
        defer { try? FileManager.default.removeItem(at: url) }
        try data.write(to: url)
        #expect(try Hashing.hash(fileAt: url.path) == Hashing.hash(data))
        #expect(throws: SecureCoreError.self) { try Hashing.hash(fileAt: url.path + ".missing") }
    }

    @Test func structuredValuesHashIndependentlyOfOrder() throws {
        let a: [String: Any] = ["b": 1, "a": ["x", Data([1])], "c": true, "d": 1.5]
        var b = [String: Any]()
        for key in ["d", "c", "a", "b"] { b[key] = a[key] }
        #expect(try Hashing.hash(propertyList: a) == Hashing.hash(propertyList: b))
        #expect(try Hashing.hash(propertyList: ["k": 1]) != Hashing.hash(propertyList: ["k": true]))
        #expect(try Hashing.hash(propertyList: ["ab", "c"]) != Hashing.hash(propertyList: ["a", "bc"]))
        #expect(throws: SecureCoreError.self) { try Hashing.hash(propertyList: [NSObject()]) }
        struct V: Codable { var z = 1; var a = "x" }
        #expect(try CanonicalEncoding.json(V()) == Data(#"{"a":"x","z":1}"#.utf8))
        #expect(try Hashing.hash(encodable: V()) == Hashing.hash(Data(#"{"a":"x","z":1}"#.utf8)))
    }

    @Test func hmacVerifiesInConstantTimeAPI() {
        let mac = MessageAuthentication.hmac(Data("m".utf8), key: Data("k".utf8))
        #expect(MessageAuthentication.isValid(mac, for: Data("m".utf8), key: Data("k".utf8)))
        #expect(!MessageAuthentication.isValid(mac, for: Data("n".utf8), key: Data("k".utf8)))
        #expect(!MessageAuthentication.isValid(mac.prefix(16), for: Data("m".utf8), key: Data("k".utf8)))
    }
}

@Suite struct SecretBytesTests {
    @Test func neverPrintsItsContents() {
        let secret = SecretBytes(Data("hunter2".utf8))
        #expect(secret.description == "SecretBytes(7 bytes, redacted)")
        #expect(!String(reflecting: secret).contains("hunter2"))
        #expect(!"\(secret)".contains("68756e74"))
        var dumped = ""
        dump(secret, to: &dumped)
        #expect(!dumped.contains("104"))  // no byte values
    }

    @Test func comparesByValue() {
        #expect(SecretBytes(Data([1, 2, 3])) == SecretBytes(Data([1, 2, 3])))
        #expect(SecretBytes(Data([1, 2, 3])) != SecretBytes(Data([1, 2, 4])))
        #expect(SecretBytes(Data([1, 2])) != SecretBytes(Data([1, 2, 3])))
        #expect(ConstantTime.equal(Data(), Data()))
    }

    @Test func zeroesItsBufferOnRelease() {
        let storage = SecretBytes.Storage(count: 16)
        storage.buffer.copyBytes(from: [UInt8](repeating: 0xaa, count: 16))
        Zeroization.zero(storage.buffer)
        #expect(storage.buffer.allSatisfy { $0 == 0 })
    }
}

@Suite struct KDFTests {
    @Test func calibrationStaysWithinLimits() throws {
        let kdf = try PasswordKDF.calibrateScrypt(target: .milliseconds(50), limits: KDFLimits(maxScryptLogN: 14))
        guard case .scrypt(let logN, 8, 1) = kdf else { Issue.record("unexpected \(kdf)"); return }
        #expect((10...14).contains(logN))
        let pbkdf2 = try PasswordKDF.calibratePBKDF2(target: .milliseconds(20))
        guard case .pbkdf2(.sha256, let rounds) = pbkdf2 else { Issue.record("unexpected \(pbkdf2)"); return }
        #expect(rounds >= 1000)
    }

    @Test func invalidParametersAreRejected() {
        #expect(throws: SecureCoreError.self) { try PasswordKDF.scrypt(logN: 0, r: 8, p: 1).validate() }
        #expect(throws: SecureCoreError.self) { try PasswordKDF.scrypt(logN: 10, r: 0, p: 1).validate() }
        #expect(throws: SecureCoreError.self) { try PasswordKDF.pbkdf2(hash: .sha256, rounds: 0).validate() }
        #expect(throws: SecureCoreError.self) { try PasswordKDF.pbkdf2(hash: HashFunction.Insecure.md5, rounds: 10).validate() }
        #expect(throws: SecureCoreError.self) { try KeyDerivation.hkdf(inputKeyMaterial: Data([1]), salt: Data(), info: Data(), outputByteCount: 0) }
    }
}

/// X25519 through `nonZeroSharedSecret`: swift-crypto returns the all-zero secret of a low-order
/// point unchecked, and every X25519 in the package refuses it.
@Suite struct X25519LowOrderTests {
    @Test(arguments: TestSupport.lowOrderX25519Points) func lowOrderPointsGiveNoSharedSecret(_ point: Data) throws {
        let key = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: point)
        // What swift-crypto itself returns: the zero secret, without an error.
        #expect(try ConstantTime.isZero(Curve25519.KeyAgreement.PrivateKey().sharedSecretFromKeyAgreement(with: key)))
        #expect(Curve25519.KeyAgreement.PrivateKey().nonZeroSharedSecret(with: key) == nil)
        #expect(key.isLowOrder)
    }

    @Test func aPublicKeyAgrees() throws {
        let (a, b) = (Curve25519.KeyAgreement.PrivateKey(), Curve25519.KeyAgreement.PrivateKey())
        let shared = try #require(a.nonZeroSharedSecret(with: b.publicKey))
        #expect(shared == (try b.sharedSecretFromKeyAgreement(with: a.publicKey)))
        #expect(!b.publicKey.isLowOrder)
        #expect(ConstantTime.isZero(Data(count: 5)) && !ConstantTime.isZero(Data([0, 0, 1])) && ConstantTime.isZero(Data()))
    }
}
