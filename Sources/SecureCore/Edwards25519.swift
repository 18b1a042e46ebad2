import Foundation

/// Ed25519 public-key arithmetic that swift-crypto does not expose: the RFC 8032 §5.1.3 decoding
/// check of a 32-byte point encoding, and the birational map to X25519 (Montgomery) form,
/// u = (1 + y) / (1 − y) mod 2^255 − 19 (RFC 7748 §4.1). Shared by SecureKeys (OpenSSH key import,
/// through `SSHPublicKey`) and AgeEncryption (`ssh-ed25519` recipients).
///
/// Only public keys pass through here, so the arithmetic is deliberately NOT constant-time
/// (square-and-multiply with branches on the exponent and on limb comparisons): never use it on
/// secret values.
package enum Edwards25519 {
    /// A field element as four little-endian 64-bit limbs, always fully reduced.
    package typealias Element = [UInt64]
    /// p = 2^255 − 19.
    package static let prime: Element = [0xffff_ffff_ffff_ffed, .max, .max, 0x7fff_ffff_ffff_ffff]
    private static let one: Element = [1, 0, 0, 0]
    private static let zero: Element = [0, 0, 0, 0]
    /// The curve constant d = −121665 / 121666 mod p (RFC 8032 §5.1), computed from its definition.
    package static let d: Element = multiply(
        subtract(zero, [121_665, 0, 0, 0]), power([121_666, 0, 0, 0], exponent: subtract(prime, [2, 0, 0, 0])))
    /// (p − 1) / 2, the exponent of Euler's criterion.
    private static let halfPrimeMinusOne: Element = [0xffff_ffff_ffff_fff6, .max, .max, 0x3fff_ffff_ffff_ffff]

    /// Why 32 bytes are not the encoding of an Ed25519 point (RFC 8032 §5.1.3).
    package enum Defect: Sendable, Equatable {
        /// The encoding is not 32 bytes long.
        case wrongLength
        /// y (the low 255 bits) is not below p: a non-canonical encoding.
        case nonCanonicalY
        /// No x satisfies the curve equation: x² = (y² − 1) / (d·y² + 1) is not a square mod p.
        case notOnCurve
        /// x = 0 but the sign bit is set (step 3 of RFC 8032 §5.1.3).
        case signedZeroX
    }

    /// Checks the RFC 8032 §5.1.3 decoding of `encoded`: y canonical, x² = (y² − 1) / (d·y² + 1) a
    /// square mod p, and not x = 0 with the sign bit set. Returns nil for a valid point encoding.
    /// Not constant-time (public keys only).
    package static func defect(ofPoint encoded: Data) -> Defect? {
        guard encoded.count == 32 else { return .wrongLength }
        let signBit = encoded[encoded.startIndex + 31] >> 7
        let y = element(encoded)
        guard !isAtLeastPrime(y) else { return .nonCanonicalY }
        let ySquared = multiply(y, y)
        let numerator = subtract(ySquared, one)
        // d·y² + 1 is never 0: −1/d is not a square mod p.
        let denominator = add(multiply(d, ySquared), one)
        let xSquared = multiply(numerator, power(denominator, exponent: subtract(prime, [2, 0, 0, 0])))
        if xSquared == zero { return signBit == 1 ? .signedZeroX : nil }
        // Euler's criterion: a non-zero a is a square iff a^((p−1)/2) = 1.
        return power(xSquared, exponent: halfPrimeMinusOne) == one ? nil : .notOnCurve
    }

    /// The 32-byte little-endian u of the Ed25519 point encoded by `encoded`; nil when the encoding
    /// is not a valid point (see `defect(ofPoint:)`) or the point is the identity (y = 1), whose u
    /// is undefined.
    package static func montgomeryU(fromEdwardsY encoded: Data) -> Data? {
        guard defect(ofPoint: encoded) == nil else { return nil }
        let y = element(encoded)
        let denominator = subtract(one, y)
        guard denominator != zero else { return nil }
        let u = multiply(add(one, y), power(denominator, exponent: subtract(prime, [2, 0, 0, 0])))
        return Data((0..<32).map { UInt8(truncatingIfNeeded: u[$0 / 8] >> (8 * ($0 % 8))) })
    }

    /// y of a 32-byte encoding: little-endian, with the top bit (the sign of x) cleared; not reduced.
    private static func element(_ encoded: Data) -> Element {
        var y: Element = (0..<4).map { limb in
            (0..<8).reduce(UInt64(0)) { $0 | UInt64(encoded[encoded.startIndex + limb * 8 + $1]) << (8 * $1) }
        }
        y[3] &= 0x7fff_ffff_ffff_ffff
        return y
    }

    package static func isAtLeastPrime(_ a: Element) -> Bool {
        for i in (0..<4).reversed() where a[i] != prime[i] { return a[i] > prime[i] }
        return true
    }

    /// a + b − (p if needed), for a, b < p (the sum fits 256 bits).
    package static func add(_ a: Element, _ b: Element) -> Element {
        var sum = Element(repeating: 0, count: 4)
        var carry: UInt64 = 0
        for i in 0..<4 {
            let (s1, o1) = a[i].addingReportingOverflow(b[i])
            let (s2, o2) = s1.addingReportingOverflow(carry)
            sum[i] = s2
            carry = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
        return isAtLeastPrime(sum) ? rawSubtract(sum, prime).0 : sum
    }

    /// a − b mod p, for a, b < p.
    package static func subtract(_ a: Element, _ b: Element) -> Element {
        let (difference, borrowed) = rawSubtract(a, b)
        return borrowed ? rawAdd(difference, prime) : difference
    }

    /// a · b mod p, using 2^256 ≡ 38.
    package static func multiply(_ a: Element, _ b: Element) -> Element {
        var wide = [UInt64](repeating: 0, count: 8)
        for i in 0..<4 {
            var carry: UInt64 = 0
            for j in 0..<4 {
                let (high, low) = a[i].multipliedFullWidth(by: b[j])
                let (s1, o1) = wide[i + j].addingReportingOverflow(low)
                let (s2, o2) = s1.addingReportingOverflow(carry)
                wide[i + j] = s2
                carry = high &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0)
            }
            wide[i + 4] = carry
        }
        // Fold the high 256 bits: low + 38·high, then the (small) overflow limb once more.
        var folded = Element(repeating: 0, count: 4)
        var carry: UInt64 = 0
        for i in 0..<4 {
            let (high, low) = wide[i + 4].multipliedFullWidth(by: 38)
            let (s1, o1) = wide[i].addingReportingOverflow(low)
            let (s2, o2) = s1.addingReportingOverflow(carry)
            folded[i] = s2
            carry = high &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0)
        }
        var addend = carry &* 38
        while addend != 0 {
            var rippling = addend
            for i in 0..<4 where rippling != 0 {
                let (s, o) = folded[i].addingReportingOverflow(rippling)
                folded[i] = s
                rippling = o ? 1 : 0
            }
            addend = rippling * 38  // a carry out of the top limb is another 2^256 ≡ 38
        }
        while isAtLeastPrime(folded) { folded = rawSubtract(folded, prime).0 }
        return folded
    }

    /// base^exponent mod p by square-and-multiply (exponent fully reduced).
    package static func power(_ base: Element, exponent: Element) -> Element {
        var result: Element = [1, 0, 0, 0]
        for bit in (0..<256).reversed() {
            result = multiply(result, result)
            if exponent[bit / 64] >> (bit % 64) & 1 == 1 { result = multiply(result, base) }
        }
        return result
    }

    private static func rawSubtract(_ a: Element, _ b: Element) -> (Element, Bool) {
        var out = Element(repeating: 0, count: 4)
        var borrow = false
        for i in 0..<4 {
            let (d1, o1) = a[i].subtractingReportingOverflow(b[i])
            let (d2, o2) = d1.subtractingReportingOverflow(borrow ? 1 : 0)
            out[i] = d2
            borrow = o1 || o2
        }
        return (out, borrow)
    }

    private static func rawAdd(_ a: Element, _ b: Element) -> Element {
        var out = Element(repeating: 0, count: 4)
        var carry = false
        for i in 0..<4 {
            let (s1, o1) = a[i].addingReportingOverflow(b[i])
            let (s2, o2) = s1.addingReportingOverflow(carry ? 1 : 0)
            out[i] = s2
            carry = o1 || o2
        }
        return out
    }
}
