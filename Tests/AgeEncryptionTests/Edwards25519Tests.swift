import Crypto
import Foundation
import Testing

@testable import AgeEncryption

/// The hand-written Ed25519 → X25519 public-key map (swift-crypto does not expose it), checked
/// against swift-crypto itself: the X25519 public key derived from an Ed25519 seed's scalar must be
/// the map of the Ed25519 public key.
@Suite struct Edwards25519Tests {
    @Test func mapAgreesWithSwiftCryptoOnRandomKeys() throws {
        for _ in 0..<200 {
            let signing = Curve25519.Signing.PrivateKey()
            let scalar = Data(SHA512.hash(data: signing.rawRepresentation)).prefix(32)
            let expected = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: scalar).publicKey.rawRepresentation
            #expect(Edwards25519.montgomeryU(fromEdwardsY: signing.publicKey.rawRepresentation) == expected)
        }
    }

    @Test func rejectsNonCanonicalAndDegenerateInputs() {
        // y = p (non-canonical encoding of 0), y = 2^255 - 1, and y = 1 (the identity, where 1 - y = 0).
        var p = Data(repeating: 0xff, count: 32)
        p[0] = 0xed
        p[31] = 0x7f
        #expect(Edwards25519.montgomeryU(fromEdwardsY: p) == nil)
        #expect(Edwards25519.montgomeryU(fromEdwardsY: Data(repeating: 0xff, count: 32).dropLast() + Data([0x7f])) == nil)
        #expect(Edwards25519.montgomeryU(fromEdwardsY: Data([1] + [UInt8](repeating: 0, count: 31))) == nil)
        #expect(Edwards25519.montgomeryU(fromEdwardsY: Data(count: 31)) == nil)
    }
}
