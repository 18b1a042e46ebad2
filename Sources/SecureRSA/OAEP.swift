import Crypto
import Foundation
import SecureCore

/// RSAES-OAEP (RFC 8017 §7.1) with a label, over any swift-crypto hash for both the label hash and
/// MGF1. swift-crypto's OAEP takes no label; age's `ssh-rsa` stanzas need one.
///
/// Encryption uses the public operation (`RSAPublicOperation`); decryption uses BoringSSL's private
/// operation (`RSAPrivateOperation`) and decodes the padding in constant time with one error for
/// every failure.
public enum OAEP {
    /// The longest message OAEP carries with a k-byte modulus and an `H` hash: k − 2·hLen − 2.
    public static func maximumMessageLength<H: Crypto.HashFunction>(modulusByteCount: Int, hash: H.Type) -> Int {
        modulusByteCount - 2 * H.Digest.byteCount - 2
    }

    /// RSAES-OAEP-ENCRYPT (§7.1.1) of `message` under `key` with `label`, hash `H` and MGF1 over
    /// `MGFHash`, with a fresh random seed. Throws `RSAError.messageTooLong`.
    public static func encrypt<H: Crypto.HashFunction, MGFHash: Crypto.HashFunction>(
        _ message: SecretBytes, label: some DataProtocol, key: RSAPublicOperation, hash: H.Type, mgfHash: MGFHash.Type
    ) throws(RSAError) -> Data {
        let em = try encode(message, label: label, modulusByteCount: key.modulusByteCount, hash: hash, mgfHash: mgfHash)
        do {
            return try em.withUnsafeBytes { bytes throws(RSAError) in Data(try key.apply(bytes)) }
        } catch {
            // EM starts with a zero byte, so it is always below n: the public operation cannot refuse it.
            throw .messageTooLong(maximum: maximumMessageLength(modulusByteCount: key.modulusByteCount, hash: hash))
        }
    }

    /// EME-OAEP encoding (§7.1.1 step 2) with a fresh random seed: the k-byte encoded message
    /// `0x00 ‖ maskedSeed ‖ maskedDB`, DB = lHash ‖ PS ‖ 0x01 ‖ M. Throws `RSAError.messageTooLong`.
    /// Public for the fuzz targets, which need well-formed encodings as seeds.
    @_spi(Fuzzing) public static func encode<H: Crypto.HashFunction, MGFHash: Crypto.HashFunction>(
        _ message: SecretBytes, label: some DataProtocol, modulusByteCount k: Int, hash: H.Type, mgfHash: MGFHash.Type
    ) throws(RSAError) -> SecretBytes {
        let hashLength = H.Digest.byteCount
        let maximum = maximumMessageLength(modulusByteCount: k, hash: hash)
        guard maximum >= 0, message.count <= maximum else { throw .messageTooLong(maximum: max(maximum, 0)) }
        let seed = SecretBytes.random(count: hashLength)
        return SecretBytes(count: k) { em in
            em.initializeMemory(as: UInt8.self, repeating: 0)
            let seedPart = UnsafeMutableRawBufferPointer(rebasing: em[1...hashLength])
            let db = UnsafeMutableRawBufferPointer(rebasing: em[(1 + hashLength)...])
            H.hash(data: Data(label)).withUnsafeBytes { db.copyMemory(from: $0) }
            db[db.count - message.count - 1] = 0x01
            message.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: db[(db.count - message.count)...]).copyMemory(from: $0) }
            seed.withUnsafeBytes { seedPart.copyMemory(from: $0) }
            seed.withUnsafeBytes { MGF1.xorMask(mgfHash, seed: $0, into: db) }
            MGF1.xorMask(mgfHash, seed: UnsafeRawBufferPointer(db), into: seedPart)
        }
    }

    /// RSAES-OAEP-DECRYPT (§7.1.2) of `ciphertext` with `key`, `label`, hash `H` and MGF1 over
    /// `MGFHash`. Throws `RSAError.decryptionFailed` for every failure: a wrong length, a number not
    /// below n, a wrong label, key or padding. The padding check does not branch on secret values
    /// and has no early exit; only its overall result decides.
    public static func decrypt<H: Crypto.HashFunction, MGFHash: Crypto.HashFunction>(
        _ ciphertext: some DataProtocol, label: some DataProtocol, key: RSAPrivateOperation, hash: H.Type, mgfHash: MGFHash.Type
    ) throws(RSAError) -> SecretBytes {
        let k = key.publicOperation.modulusByteCount, hashLength = H.Digest.byteCount
        // Public checks (§7.1.2 step 1): lengths only.
        guard ciphertext.count == k, k >= 2 * hashLength + 2 else { throw .decryptionFailed }
        let em: SecretBytes
        do {
            em = try key.apply(ciphertext)
        } catch {
            throw .decryptionFailed
        }
        let labelHash = Array(H.hash(data: Data(label)))
        // Work on a private copy: unmasking happens in place.
        var good: UInt = 0, messageStart = 0
        let work = em.withUnsafeBytes { source in
            SecretBytes(count: k) { buffer in
                buffer.copyMemory(from: source)
                (good, messageStart) = unpad(buffer, labelHash: labelHash, mgfHash: mgfHash)
            }
        }
        // The one branch on the outcome, as in BoringSSL's RSA_padding_check_PKCS1_OAEP_mgf1: only
        // whether decryption succeeded is revealed, and the message length after it did.
        guard good == UInt.max else { throw .decryptionFailed }
        return work.withUnsafeBytes { SecretBytes($0[messageStart...]) }
    }

    /// Unmasks EM in place and checks its padding without branching on its contents. Returns
    /// `good` (all ones when Y = 0, lHash' = lHash and PS ‖ 0x01 is well formed; zero otherwise) and
    /// the offset in EM where the message starts. Public for the fuzz targets only.
    @_spi(Fuzzing) public static func unpad<MGFHash: Crypto.HashFunction>(
        _ em: UnsafeMutableRawBufferPointer, labelHash: [UInt8], mgfHash: MGFHash.Type
    ) -> (good: UInt, messageStart: Int) {
        let hashLength = labelHash.count
        let seed = UnsafeMutableRawBufferPointer(rebasing: em[1...hashLength])
        let db = UnsafeMutableRawBufferPointer(rebasing: em[(1 + hashLength)...])
        // seed = maskedSeed ⊕ MGF(maskedDB); DB = maskedDB ⊕ MGF(seed).
        MGF1.xorMask(mgfHash, seed: UnsafeRawBufferPointer(db), into: seed)
        MGF1.xorMask(mgfHash, seed: UnsafeRawBufferPointer(seed), into: db)

        var good = ConstantTimeMask.isZero(UInt(em[0]))
        var hashDifference: UInt = 0
        for i in 0..<hashLength { hashDifference |= UInt(db[i] ^ labelHash[i]) }
        good &= ConstantTimeMask.isZero(hashDifference)

        // Find the first non-zero byte after lHash; it must be 0x01, and it must exist.
        var lookingForSeparator = UInt.max, separatorIndex: UInt = 0, nonZeroBeforeSeparator: UInt = 0
        for i in hashLength..<db.count {
            let byte = UInt(db[i])
            let isOne = ConstantTimeMask.isZero(byte ^ 1), isZero = ConstantTimeMask.isZero(byte)
            separatorIndex = ConstantTimeMask.select(lookingForSeparator & isOne, UInt(i), separatorIndex)
            nonZeroBeforeSeparator |= lookingForSeparator & ~isOne & ~isZero
            lookingForSeparator &= ~isOne
        }
        good &= ~lookingForSeparator & ~nonZeroBeforeSeparator
        // The message offset in EM; meaningful only when good.
        return (good, 1 + hashLength + Int(separatorIndex) + 1)
    }
}

/// Word-sized masks for constant-time selection: all ones for true, zero for false.
enum ConstantTimeMask {
    /// All ones when `x` is zero, else zero, without a branch.
    @inline(__always) static func isZero(_ x: UInt) -> UInt {
        // (~x & (x − 1)) has its top bit set exactly when x = 0.
        let top = (~x & (x &- 1)) >> (UInt.bitWidth - 1)
        return 0 &- top
    }

    /// `a` when `mask` is all ones, `b` when it is zero.
    @inline(__always) static func select(_ mask: UInt, _ a: UInt, _ b: UInt) -> UInt { (mask & a) | (~mask & b) }
}
