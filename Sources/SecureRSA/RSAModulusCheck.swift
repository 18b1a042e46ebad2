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
}
