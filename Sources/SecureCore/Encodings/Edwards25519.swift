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
    /// A field element as four little-endian 64-bit limbs, always fully reduced. A fixed-size
    /// value: the arithmetic allocates nothing.
    package struct Element: Equatable, Sendable, ExpressibleByArrayLiteral {
        private var limbs: (UInt64, UInt64, UInt64, UInt64)

        init(_ l0: UInt64, _ l1: UInt64, _ l2: UInt64, _ l3: UInt64) {
            limbs = (l0, l1, l2, l3)
        }

        /// Four limbs, least significant first.
        package init(arrayLiteral elements: UInt64...) {
            precondition(elements.count == 4, "a field element has four limbs")
            self.init(elements[0], elements[1], elements[2], elements[3])
        }

        subscript(i: Int) -> UInt64 {
            get {
                switch i {
                case 0: limbs.0
                case 1: limbs.1
                case 2: limbs.2
                default: limbs.3
                }
            }
            set {
                switch i {
                case 0: limbs.0 = newValue
                case 1: limbs.1 = newValue
                case 2: limbs.2 = newValue
                default: limbs.3 = newValue
                }
            }
        }

        package static func == (a: Element, b: Element) -> Bool {
            a.limbs == b.limbs
        }
    }

    /// p = 2^255 − 19.
    package static let prime = Element(0xffff_ffff_ffff_ffed, .max, .max, 0x7fff_ffff_ffff_ffff)
    private static let zero = Element(0, 0, 0, 0)
    private static let one = Element(1, 0, 0, 0)
    /// p − 2, the exponent of inversion by Fermat's little theorem.
    private static let primeMinusTwo = Element(0xffff_ffff_ffff_ffeb, .max, .max, 0x7fff_ffff_ffff_ffff)
    /// The curve constant d = −121665 / 121666 mod p (RFC 8032 §5.1), computed from its definition.
    package static let d = multiply(subtract(zero, Element(121_665, 0, 0, 0)), inverse(Element(121_666, 0, 0, 0)))
    /// (p − 1) / 2, the exponent of Euler's criterion.
    private static let halfPrimeMinusOne = Element(0xffff_ffff_ffff_fff6, .max, .max, 0x3fff_ffff_ffff_ffff)
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
        /// A valid encoding of one of the eight points of small order (8·A is the identity). No
        /// one holds such a key's secret, and for RFC 8032 verification (BoringSSL's included)
        /// one signature, R = the identity and S = 0, verifies every message under it.
        case smallOrder
    }

    /// The encodings of the eight points of small order that pass the decoding check (with the
    /// sign bit set, the two with x = 0 are `signedZeroX`; with y not below p, `nonCanonicalY`):
    /// the identity, the point of order 2, the two of order 4 and the four of order 8. Each
    /// checked independently (Python: decode, double three times, reach (0, 1)).
    private static let smallOrderEncodings: Set<Data> = Set([
        "0100000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    ].map { hex in
        Data(stride(from: 0, to: hex.count, by: 2).map { offset in
            UInt8(hex.dropFirst(offset).prefix(2), radix: 16)!
        })
    })

    /// Checks the RFC 8032 §5.1.3 decoding of `encoded`: y canonical, x² = (y² − 1) / (d·y² + 1) a
    /// square mod p, and not x = 0 with the sign bit set; then that the point is not of small
    /// order. Returns nil for a valid point encoding of a usable public key. Not constant-time
    /// (public keys only).
    package static func defect(ofPoint encoded: Data) -> Defect? {
        guard encoded.count == 32 else { return .wrongLength }
        let signBit = encoded[encoded.startIndex + 31] >> 7
        let y = element(encoded)
        guard !isAtLeastPrime(y) else { return .nonCanonicalY }
        let ySquared = multiply(y, y)
        let numerator = subtract(ySquared, one)
        // d·y² + 1 is never 0: −1/d is not a square mod p.
        let denominator = add(multiply(d, ySquared), one)
        let xSquared = multiply(numerator, inverse(denominator))
        if xSquared == zero, signBit == 1 { return .signedZeroX }
        // Euler's criterion: a non-zero a is a square iff a^((p−1)/2) = 1.
        if xSquared != zero, power(xSquared, exponent: halfPrimeMinusOne) != one { return .notOnCurve }
        return smallOrderEncodings.contains(Data(encoded)) ? .smallOrder : nil
    }

    /// The 32-byte little-endian u of the Ed25519 point encoded by `encoded`; nil when the encoding
    /// is not a valid point or is of small order (see `defect(ofPoint:)`; the identity, y = 1, has
    /// no u at all).
    package static func montgomeryU(fromEdwardsY encoded: Data) -> Data? {
        guard defect(ofPoint: encoded) == nil else { return nil }
        let y = element(encoded)
        // 1 − y is not 0: y = 1 is the identity, of small order.
        let u = multiply(add(one, y), inverse(subtract(one, y)))
        return Data((0..<32).map { UInt8(truncatingIfNeeded: u[$0 / 8] >> (8 * ($0 % 8))) })
    }

    /// y of a 32-byte encoding: little-endian, with the top bit (the sign of x) cleared; not reduced.
    private static func element(_ encoded: Data) -> Element {
        var y = zero
        for limb in 0..<4 {
            y[limb] = (0..<8).reduce(UInt64(0)) { $0 | UInt64(encoded[encoded.startIndex + limb * 8 + $1]) << (8 * $1) }
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
        var sum = zero
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
        // The 512-bit product as two halves of four limbs.
        var low = zero, high = zero
        for i in 0..<4 {
            var carry: UInt64 = 0
            for j in 0..<4 {
                let (productHigh, productLow) = a[i].multipliedFullWidth(by: b[j])
                let k = i + j
                let (s1, o1) = (k < 4 ? low[k] : high[k - 4]).addingReportingOverflow(productLow)
                let (s2, o2) = s1.addingReportingOverflow(carry)
                if k < 4 { low[k] = s2 } else { high[k - 4] = s2 }
                carry = productHigh &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0)
            }
            high[i] = carry
        }
        // Fold the high 256 bits: low + 38·high, then the (small) overflow limb once more.
        var folded = zero
        var carry: UInt64 = 0
        for i in 0..<4 {
            let (foldHigh, foldLow) = high[i].multipliedFullWidth(by: 38)
            let (s1, o1) = low[i].addingReportingOverflow(foldLow)
            let (s2, o2) = s1.addingReportingOverflow(carry)
            folded[i] = s2
            carry = foldHigh &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0)
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
        var result = one
        for bit in (0..<256).reversed() {
            result = multiply(result, result)
            if exponent[bit / 64] >> (bit % 64) & 1 == 1 { result = multiply(result, base) }
        }
        return result
    }

    /// 1 / a mod p, as a^(p − 2); a must not be 0.
    private static func inverse(_ a: Element) -> Element {
        power(a, exponent: primeMinusTwo)
    }

    private static func rawSubtract(_ a: Element, _ b: Element) -> (Element, Bool) {
        var out = zero
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
        var out = zero
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
