import Foundation

/// The birational map from an Ed25519 public key to its X25519 (Montgomery) form,
/// u = (1 + y) / (1 − y) mod 2^255 − 19 (RFC 7748 §4.1), which swift-crypto does not expose.
/// Only public keys pass through here, so the arithmetic need not be constant-time.
enum Edwards25519 {
    /// A field element as four little-endian 64-bit limbs, always fully reduced.
    typealias Element = [UInt64]
    static let prime: Element = [0xffff_ffff_ffff_ffed, .max, .max, 0x7fff_ffff_ffff_ffff]

    /// The 32-byte little-endian u of the Ed25519 point encoded by `encoded`; nil when y is not
    /// canonical or the point is the identity (y = 1).
    static func montgomeryU(fromEdwardsY encoded: Data) -> Data? {
        guard encoded.count == 32 else { return nil }
        var y: Element = (0..<4).map { limb in
            (0..<8).reduce(UInt64(0)) { $0 | UInt64(encoded[encoded.startIndex + limb * 8 + $1]) << (8 * $1) }
        }
        y[3] &= 0x7fff_ffff_ffff_ffff  // the top bit is the sign of x
        guard !isAtLeastPrime(y) else { return nil }
        let one: Element = [1, 0, 0, 0]
        let denominator = subtract(one, y)
        guard denominator != [0, 0, 0, 0] else { return nil }
        let u = multiply(add(one, y), power(denominator, exponent: subtract(prime, [2, 0, 0, 0])))
        return Data((0..<32).map { UInt8(truncatingIfNeeded: u[$0 / 8] >> (8 * ($0 % 8))) })
    }

    static func isAtLeastPrime(_ a: Element) -> Bool {
        for i in (0..<4).reversed() where a[i] != prime[i] { return a[i] > prime[i] }
        return true
    }

    /// a + b − (p if needed), for a, b < p (the sum fits 256 bits).
    static func add(_ a: Element, _ b: Element) -> Element {
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
    static func subtract(_ a: Element, _ b: Element) -> Element {
        let (difference, borrowed) = rawSubtract(a, b)
        return borrowed ? rawAdd(difference, prime) : difference
    }

    /// a · b mod p, using 2^256 ≡ 38.
    static func multiply(_ a: Element, _ b: Element) -> Element {
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
    static func power(_ base: Element, exponent: Element) -> Element {
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
