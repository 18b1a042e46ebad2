import Foundation
import SecureCore
import SecureKeys
import Testing

@Suite struct SignatureTests {
    static let pairs: [(KeyType, SignatureScheme)] = [
        (.rsa2048, .rsaPSS), (.rsa2048, .rsaPKCS1v15), (.rsa3072, .rsaPSS), (.p256, .ecdsaDER), (.p256, .ecdsaRaw),
        (.p384, .ecdsaDER), (.p384, .ecdsaRaw), (.p521, .ecdsaDER), (.p521, .ecdsaRaw), (.ed25519, .ed25519),
    ]

    @Test(arguments: pairs)
    func signAndVerify(type: KeyType, scheme: SignatureScheme) throws {
        let key = Fixtures.key(type).key
        let message = Data("a message to sign".utf8)
        let signature = try key.signature(for: message, scheme: scheme)
        try key.publicKey.verify(signature, for: message, scheme: scheme)
        #expect(keyError { try key.publicKey.verify(signature, for: message + Data([1]), scheme: scheme) } == .invalidSignature)
        var flipped = signature
        flipped[flipped.count / 2] ^= 0x01
        #expect(!key.publicKey.isValidSignature(flipped, for: message, scheme: scheme))
        #expect(keyError { try key.publicKey.verify(signature.dropLast(), for: message, scheme: scheme) }.map {
            $0 == .invalidSignature || { if case .malformedSignature = $0 { true } else { false } }($0)
        } == true)
        // Another key of the same type rejects it.
        let other = try AsymmetricPrivateKey.generate(type == .rsa2048 || type == .rsa3072 ? .p256 : type)
        #expect(!other.publicKey.isValidSignature(signature, for: message, scheme: scheme))
    }

    @Test func defaultsAndStringAPI() throws {
        let rsa = Fixtures.rsa2048.key
        let base64 = try rsa.signature(for: "hello")
        #expect(rsa.publicKey.isValidSignature(base64: base64, for: "hello"))
        #expect(rsa.publicKey.isValidSignature(base64: base64, for: "hello", scheme: .rsaPSS))
        #expect(!rsa.publicKey.isValidSignature(base64: base64, for: "hello", scheme: .rsaPKCS1v15))
        #expect(!rsa.publicKey.isValidSignature(base64: "not base64!", for: "hello"))
        #expect(SignatureScheme.default(for: .p256) == .ecdsaDER)
        #expect(SignatureScheme.default(for: .x25519) == nil)
    }

    @Test func unsuitableKeysAndSchemesAreRejected() throws {
        #expect(keyError { _ = try Fixtures.x25519.key.signature(for: Data()) }.map { if case .wrongKeyType = $0 { true } else { false } } == true)
        #expect(keyError { _ = try Fixtures.p256.key.signature(for: Data(), scheme: .rsaPSS) }.map { if case .wrongKeyType = $0 { true } else { false } } == true)
        #expect(keyError { _ = try Fixtures.rsa1024.key.signature(for: Data()) } == .unsupportedKeySize(1024))
        #expect(keyError { try Fixtures.ed25519.key.publicKey.verify(Data(count: 63), for: Data()) }.map { if case .malformedSignature = $0 { true } else { false } } == true)
        #expect(keyError { try Fixtures.p256.key.publicKey.verify(Data([0x30, 0x00]), for: Data()) }.map { if case .malformedSignature = $0 { true } else { false } } == true)
    }
}
