import Crypto
import Foundation

/// RSASSA-PSS verification (RFC 8017 §8.1.2 with EMSA-PSS-VERIFY, §9.1.2) for any salt length.
///
/// swift-crypto verifies PSS only with the salt as long as the digest; OpenSSL's signing default
/// (`rsa_pss_saltlen:max`, older releases `auto`) and pyca's `PSS.MAX_LENGTH` use other lengths. A
/// verifier that recovers the salt length from the encoded message, as OpenSSL's `auto` does,
/// accepts all of them: PSS's security does not depend on the verifier knowing the salt length.
public enum PSSVerifier {
    /// How long the salt must be.
    public enum SaltLength: Sendable, Equatable {
        /// Any length: recovered from the encoded message (OpenSSL's `rsa_pss_saltlen:auto` when verifying).
        case any
        /// Exactly this many bytes.
        case exactly(Int)
    }

    /// True when `signature` is a valid RSASSA-PSS signature of the digest `messageHash` (computed
    /// with `H`) under `key`, with MGF1 over `MGFHash` and a salt of `saltLength`. A signature of
    /// the wrong length, a number not below the modulus, or any padding error is simply not valid.
    public static func isValid<H: Crypto.HashFunction, MGFHash: Crypto.HashFunction>(
        signature: some DataProtocol, messageHash: some Sequence<UInt8>, key: RSAPublicOperation,
        hash: H.Type, mgfHash: MGFHash.Type, saltLength: SaltLength
    ) -> Bool {
        // RSAVP1 (§8.1.2 steps 1–2): a signature of k bytes whose number is below n.
        guard let em = try? key.apply(signature) else { return false }
        return isValidEncoding(em, messageHash: Array(messageHash), modulusBits: key.modulusBitCount,
                               hash: hash, mgfHash: mgfHash, saltLength: saltLength)
    }

    /// EMSA-PSS-VERIFY (§9.1.2) on the k-byte result of RSAVP1, with emBits = modBits − 1. For the
    /// fuzz targets, which reach the decoding with chosen encoded messages (no RSA in the way).
    @_spi(Fuzzing) public static func isValidEncoding<H: Crypto.HashFunction, MGFHash: Crypto.HashFunction>(
        _ k: [UInt8], messageHash: [UInt8], modulusBits: Int, hash: H.Type, mgfHash: MGFHash.Type,
        saltLength: SaltLength
    ) -> Bool {
        let hashLength = H.Digest.byteCount
        let emBits = modulusBits - 1
        let emLength = (emBits + 7) / 8
        // When modBits − 1 is a multiple of 8, EM is one byte shorter than k and k's first byte must be 0.
        guard k.count >= emLength, k.prefix(k.count - emLength).allSatisfy({ $0 == 0 }) else { return false }
        var em = Array(k.suffix(emLength))
        guard messageHash.count == hashLength else { return false }
        // Step 3: room for the hash, the salt and the two fixed bytes.
        let minimumSalt: Int
        switch saltLength {
        case .any: minimumSalt = 0
        case .exactly(let length):
            guard length >= 0 else { return false }
            minimumSalt = length
        }
        // Compared with what the small lengths leave: adding a requested salt length to them could
        // overflow (`.exactly(Int.max)`).
        guard minimumSalt <= emLength - hashLength - 2 else { return false }
        // Step 4: the trailer byte.
        guard em[emLength - 1] == 0xbc else { return false }
        // Steps 5–6: maskedDB and H; the bits above emBits must be zero.
        let dbLength = emLength - hashLength - 1
        let h = Array(em[dbLength..<(emLength - 1)])
        let unusedBits = 8 * emLength - emBits
        let topMask = UInt8(truncatingIfNeeded: 0xff >> unusedBits)
        guard em[0] & ~topMask == 0 else { return false }
        // Steps 7–9: DB = maskedDB ⊕ MGF1(H); clear the unused top bits.
        h.withUnsafeBytes { seed in
            em.withUnsafeMutableBytes { MGF1.xorMask(mgfHash, seed: seed, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<dbLength])) }
        }
        em[0] &= topMask
        let db = em[0..<dbLength]
        // Step 10: zeros, then 0x01, then the salt.
        let saltStart: Int
        switch saltLength {
        case .any:
            guard let separator = db.firstIndex(where: { $0 != 0 }), db[separator] == 0x01 else { return false }
            saltStart = separator + 1
        case .exactly(let length):
            let separator = dbLength - length - 1
            guard db[..<separator].allSatisfy({ $0 == 0 }), db[separator] == 0x01 else { return false }
            saltStart = separator + 1
        }
        // Steps 11–14: H' = Hash(0x00 × 8 ‖ mHash ‖ salt) must equal H.
        var hasher = H()
        hasher.update(data: [UInt8](repeating: 0, count: 8))
        hasher.update(data: messageHash)
        hasher.update(data: db[saltStart...])
        return hasher.finalize().elementsEqual(h)
    }
}
