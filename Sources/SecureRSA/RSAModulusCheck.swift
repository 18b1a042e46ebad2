import BigInt
import Foundation

/// A check on an RSA modulus alone (a public value), for the numbers of a private key that come
/// without their prime factors.
public enum RSAModulusCheck {
    /// Whether `n` can be the product of two or more distinct odd primes, as an RSA modulus is:
    /// false for an even n, and when gcd(2^n − 2 mod n, n) ≠ 1. That is so for every prime and
    /// every prime power p^k (Fermat: 2^p ≡ 2 mod p, so p divides 2^(p^k) − 2), for which
    /// recovering the factors from n, e and d cannot succeed (swift-crypto's recovery then never
    /// ends), and for a product of distinct primes p, q only when 2^(q−1) ≡ 1 mod p or the
    /// reverse, which random primes of RSA size are not (or for Carmichael numbers, which no key
    /// generator makes). One modular exponentiation by the modulus.
    public static func canBeProductOfDistinctPrimes(_ n: some DataProtocol) -> Bool {
        let modulus = BigUInt(Data(n))
        guard modulus > 3, modulus[bitAt: 0] else { return false }
        let residue = BigUInt(2).power(modulus, modulus: modulus)
        let difference = residue >= 2 ? residue - 2 : residue + modulus - 2
        return difference.greatestCommonDivisor(with: modulus) == 1
    }

    /// The most factors of 2 that e·d − 1 may have. For a real key e·d − 1 = k·λ(n) (or k·φ(n))
    /// with k < e < 2^32, so at most 31 come from k, and the rest from p − 1 and q − 1, which
    /// random primes share out about two each; 128 is never reached by a real key.
    public static let maximumTwoAdicity = 128

    /// Whether recovering p and q from n, e and d has bounded work: false when e·d − 1 has more
    /// than `maximumTwoAdicity` factors of 2. swift-crypto's recovery squares once per factor of 2
    /// in each of up to 100 tries, so a d chosen to make e·d − 1 a power of two (e = 3,
    /// d = (2^4095 + 1) / 3) cost about 400,000 modular squarings before the numbers were refused.
    public static func recoveryIsBounded(publicExponent e: some DataProtocol, privateExponent d: some DataProtocol) -> Bool {
        let product = BigUInt(Data(e)) * BigUInt(Data(d))
        guard product > 1 else { return false }
        return (product - 1).trailingZeroBitCount <= maximumTwoAdicity
    }
}
