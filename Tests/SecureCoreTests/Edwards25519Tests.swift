import Crypto
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// The hand-written Ed25519 public-key arithmetic (swift-crypto does not expose it): the RFC 8032
/// §5.1.3 point check, and the map to X25519 checked against swift-crypto itself (the X25519 public
/// key derived from an Ed25519 seed's scalar must be the map of the Ed25519 public key).
@Suite struct Edwards25519Tests {
    static let p = TestSupport.ed25519Prime
    static let pMinusOne: [UInt64] = [0xffff_ffff_ffff_ffec, .max, .max, 0x7fff_ffff_ffff_ffff]
    static let pPlusThree: [UInt64] = [0xffff_ffff_ffff_fff0, .max, .max, 0x7fff_ffff_ffff_ffff]

    @Test func mapAgreesWithSwiftCryptoOnRandomKeys() throws {
        for _ in 0..<200 {
            let signing = Curve25519.Signing.PrivateKey()
            let scalar = Data(SHA512.hash(data: signing.rawRepresentation)).prefix(32)
            let expected = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: scalar).publicKey.rawRepresentation
            #expect(Edwards25519.defect(ofPoint: signing.publicKey.rawRepresentation) == nil)
            #expect(Edwards25519.montgomeryU(fromEdwardsY: signing.publicKey.rawRepresentation) == expected)
        }
    }

    @Test func curveConstantIsRFC8032s() {
        // d = 37095705934669439343138083508754565189542113879843219016388785533085940283555 (RFC 8032 §5.1).
        #expect(Edwards25519.d == [0x75eb_4dca_1359_78a3, 0x0070_0a4d_4141_d8ab, 0x8cc7_4079_7779_e898, 0x5203_6cee_2b6f_fe73])
    }

    /// Which small y have no point: (y² − 1) / (d·y² + 1) is a non-square for exactly these y < 20
    /// (computed independently with Python's modular arithmetic: `pow(r, (p-1)//2, p) != 1`).
    @Test func smallYWithoutAPointAreExactlyTheNonSquares() {
        let offCurve = (UInt64(0)..<20).filter { Edwards25519.defect(ofPoint: TestSupport.ed25519Encoding(y: [$0, 0, 0, 0])) == .notOnCurve }
        #expect(offCurve == [2, 7, 8, 11, 12, 13, 17])
        // Either sign bit: the check is on y; the sign only matters for x = 0.
        #expect(Edwards25519.defect(ofPoint: TestSupport.ed25519Encoding(y: [2, 0, 0, 0], sign: 1)) == .notOnCurve)
        #expect(Edwards25519.defect(ofPoint: TestSupport.ed25519Encoding(y: [3, 0, 0, 0], sign: 1)) == nil)
    }

    @Test func rejectsNonCanonicalY() {
        #expect(Edwards25519.defect(ofPoint: TestSupport.ed25519Encoding(y: Self.p)) == .nonCanonicalY)
        #expect(Edwards25519.defect(ofPoint: TestSupport.ed25519Encoding(y: Self.pPlusThree)) == .nonCanonicalY)  // y = 3 is on the curve
        #expect(Edwards25519.defect(ofPoint: Data(repeating: 0xff, count: 32)) == .nonCanonicalY)
        #expect(Edwards25519.montgomeryU(fromEdwardsY: TestSupport.ed25519Encoding(y: Self.pPlusThree)) == nil)
    }

    @Test func rejectsXZeroWithTheSignBit() {
        // x = 0 exactly when y = ±1.
        #expect(Edwards25519.defect(ofPoint: TestSupport.ed25519Encoding(y: Self.pMinusOne, sign: 1)) == .signedZeroX)
        #expect(Edwards25519.defect(ofPoint: TestSupport.ed25519Encoding(y: [1, 0, 0, 0], sign: 1)) == .signedZeroX)
        // Without it, these two decode, but are of small order (the point of order 2, the identity).
        #expect(Edwards25519.defect(ofPoint: TestSupport.ed25519Encoding(y: Self.pMinusOne)) == .smallOrder)
        #expect(Edwards25519.defect(ofPoint: TestSupport.ed25519Encoding(y: [1, 0, 0, 0])) == .smallOrder)
    }

    /// Under a public key of small order, RFC 8032 verification (BoringSSL's, through swift-crypto)
    /// accepts one signature for every message; such encodings decode, so they are refused apart.
    @Test func refusesEveryPointOfSmallOrder() throws {
        for point in TestSupport.ed25519SmallOrderPoints {
            #expect(Edwards25519.defect(ofPoint: point) == .smallOrder, "\(point.map { String(format: "%02x", $0) }.joined())")
            #expect(Edwards25519.montgomeryU(fromEdwardsY: point) == nil)
        }
        // Why: R = the identity and S = 0 verify any message under the identity, and under the
        // point of order 2.
        let forged = TestSupport.ed25519SmallOrderPoints[0] + Data(count: 32)
        for point in TestSupport.ed25519SmallOrderPoints.prefix(2) {
            let key = try Curve25519.Signing.PublicKey(rawRepresentation: point)
            #expect(key.isValidSignature(forged, for: Data("pay Mallory".utf8)))
            #expect(key.isValidSignature(forged, for: Data("anything at all".utf8)))
        }
    }

    @Test func mapRefusesTheIdentityAndWrongLengths() {
        // y = 1 (the identity, where 1 − y = 0) has no u.
        #expect(Edwards25519.montgomeryU(fromEdwardsY: TestSupport.ed25519Encoding(y: [1, 0, 0, 0])) == nil)
        #expect(Edwards25519.defect(ofPoint: Data(count: 31)) == .wrongLength)
        #expect(Edwards25519.montgomeryU(fromEdwardsY: Data(count: 31)) == nil)
        #expect(Edwards25519.montgomeryU(fromEdwardsY: Data(count: 33)) == nil)
    }
}
