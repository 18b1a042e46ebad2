import Foundation
import SFTestSupport
import SecureCore
import SecureKeys
import Testing

/// Errors name what is wrong with a key in words, never swift-crypto's internal error codes
/// (`underlyingCoreCryptoError(error: N)`), which a mutation campaign found in `sf key fingerprint`
/// and `sf key export` messages. Every single-bit mutation of every byte of a private key (PKCS#8 of
/// each type, and PKCS#1 RSA) and of a public key (SPKI of each type) is imported, and whatever
/// error it gives must read as a sentence.
@Suite struct KeyErrorTextTests {
    static let internalWords = ["underlyingCoreCryptoError", "CryptoKitError", "internalBoringSSLError", "incorrectParameterSize"]

    static func check(_ der: Data, what: String, importing: (Data) throws -> Void) -> Int {
        var refused = 0
        for index in der.indices {
            for bit in [0, 7] {
                var mutated = der
                mutated[index] ^= UInt8(1 << bit)
                do {
                    try importing(mutated)
                } catch {
                    refused += 1
                    let text = "\(error)"
                    #expect(!internalWords.contains(where: text.contains), "\(what) byte \(index) bit \(bit): \(text)")
                }
            }
        }
        return refused
    }

    @Test(arguments: [KeyType.rsa2048, .p256, .p384, .p521, .ed25519, .x25519])
    func mutatedKeysGiveReadableErrors(type: KeyType) throws {
        let key = Fixtures.key(type).key
        let pkcs8 = key.pkcs8DERRepresentation.withUnsafeBytes { Data($0) }
        let refusedPrivate = Self.check(pkcs8, what: "PKCS#8 \(type)") { _ = try AsymmetricPrivateKey(pkcs8DERRepresentation: $0) }
        let spki = key.publicKey.spkiDERRepresentation
        let refusedPublic = Self.check(spki, what: "SPKI \(type)") { _ = try AsymmetricPublicKey(spkiDERRepresentation: $0) }
        #expect(refusedPrivate > 0 && refusedPublic > 0)
        if case .rsa(let rsa) = key {
            let pkcs1 = rsa.pkcs1DERRepresentation.withUnsafeBytes { Data($0) }
            #expect(Self.check(pkcs1, what: "PKCS#1 RSA") { _ = try RSAPrivateKey(pkcs1DERRepresentation: $0) } > 0)
        }
    }

    /// Text a key file carries (a JWK's `kty` or `crv`) reaches an error quoted, its control
    /// characters escaped: a file cannot write terminal escape sequences through `sf`.
    @Test func inputTextInErrorsIsEscaped() throws {
        let hostile = #"\u001b[31mRED\u001b]0;title\u0007\u202e\u009b"#  // JSON escapes: ESC, BEL, RLO and CSI once decoded
        for jwk in [#"{"kty":"\#(hostile)"}"#, #"{"kty":"EC","crv":"\#(hostile)","x":"AA","y":"AA"}"#, #"{"kty":"OKP","crv":"\#(hostile)","x":"AA"}"#] {
            let error = try #require(keyError { _ = try KeyImport.key(from: Data(jwk.utf8)) })
            #expect(!error.description.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0.value == 0x202E },
                    "\(error.description.debugDescription)")
            #expect(error.description.contains(#"\u{1B}[31mRED"#), "\(error.description.debugDescription)")
        }
    }

    /// The two messages the campaign met most, spelled out.
    @Test func specificMessages() throws {
        // A P-256 point off the curve (last byte of y changed).
        var spki = Fixtures.key(.p256).key.publicKey.spkiDERRepresentation
        spki[spki.count - 1] ^= 1
        let offCurve = keyError { _ = try AsymmetricPublicKey(spkiDERRepresentation: spki) }
        #expect(offCurve?.description.contains("not a valid point or scalar for this curve") == true, "\(String(describing: offCurve))")
        // An RSA private key whose private exponent was changed.
        guard case .rsa(let rsa) = Fixtures.key(.rsa2048).key else { return }
        var pkcs1 = rsa.pkcs1DERRepresentation.withUnsafeBytes { Data($0) }
        pkcs1[pkcs1.count / 2] ^= 0x10
        let inconsistent = keyError { _ = try RSAPrivateKey(pkcs1DERRepresentation: pkcs1) }
        #expect(inconsistent?.description.contains("inconsistent") == true, "\(String(describing: inconsistent))")
    }
}

/// Heimdall payloads have a maximum size, checked before any decoding: a huge input is refused with
/// a message, never an allocation failure (a 700 MB payload aborted `sf key decrypt --heimdall`
/// under a 4 GB address-space limit).
@Suite struct HeimdallLimitTests {
    @Test func oversizedPayloadsAreRefusedBeforeDecoding() throws {
        guard case .rsa(let key) = Fixtures.key(.rsa2048).key else { return }
        let maximum = Heimdall.maximumMessageByteCount
        #expect(maximum == 64 << 20)
        let refused = KeyError.legacyDecryptionFailed("the payload is larger than a Heimdall message may be (64 MiB)")
        // Length alone decides: the text is not looked at (it is not even base64 here).
        #expect(throws: refused) { try Heimdall.checkEncodedPayloadLength(200 << 20, for: key.publicKey) }
        try Heimdall.checkEncodedPayloadLength(4 * (maximum + 256 + 16) / 3 + 3, for: key.publicKey)
        let huge = String(repeating: "A", count: 4 * (maximum + 256 + 16) / 3 + 200)
        #expect(throws: refused) { try Heimdall.decodePayload(huge, for: key.publicKey) }
        #expect(throws: refused) { try Heimdall.decrypt(Data(count: 256 + maximum + 32), with: key) }
        // The writer refuses what no reader would open.
        #expect(throws: KeyError.self) { try Heimdall.encrypt(Data(count: maximum), to: key.publicKey) }
        // The largest message still round-trips.
        let largest = Data(repeating: 0x5a, count: maximum - 1)
        #expect(try Heimdall.decrypt(try Heimdall.encrypt(largest, to: key.publicKey), with: key) == largest)
    }
}
