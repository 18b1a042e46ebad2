import Crypto
import Foundation

extension Noise {
    /// The cipher functions of section 12: AEADs with a 32-byte key and a 64-bit counter nonce.
    public enum CipherFunction: String, Sendable, Hashable, CaseIterable {
        /// ChaCha20-Poly1305 (RFC 8439); the nonce is 32 zero bits then the counter little-endian.
        case chaChaPoly = "ChaChaPoly"
        /// AES-256-GCM; the nonce is 32 zero bits then the counter big-endian.
        case aesGCM = "AESGCM"

        /// ENCRYPT(k, n, ad, plaintext): ciphertext followed by the 16-byte tag.
        func encrypt(key: SymmetricKey, nonce: UInt64, ad: some DataProtocol, plaintext: some DataProtocol) -> Data {
            // Both AEADs accept any plaintext up to 2^36 bytes; a Noise message is at most 65,535.
            switch self {
            case .chaChaPoly:
                let box = try! ChaChaPoly.seal(
                    plaintext, using: key, nonce: try! ChaChaPoly.Nonce(data: nonceBytes(nonce)), authenticating: ad)
                return Self.joined(box.ciphertext, box.tag)
            case .aesGCM:
                let box = try! AES.GCM.seal(
                    plaintext, using: key, nonce: try! AES.GCM.Nonce(data: nonceBytes(nonce)), authenticating: ad)
                return Self.joined(box.ciphertext, box.tag)
            }
        }

        /// `ciphertext || tag` in a new zero-based buffer (the sealed box's fields are slices).
        private static func joined(_ ciphertext: Data, _ tag: Data) -> Data {
            var output = Data(capacity: ciphertext.count + tag.count)
            output.append(ciphertext)
            output.append(tag)
            return output
        }

        /// DECRYPT(k, n, ad, ciphertext): the plaintext, or `decryptionFailed`.
        func decrypt(key: SymmetricKey, nonce: UInt64, ad: some DataProtocol, ciphertext: some DataProtocol) throws(NoiseError)
            -> Data
        {
            guard ciphertext.count >= Noise.tagLength else { throw .decryptionFailed }
            let body = ciphertext.prefix(ciphertext.count - Noise.tagLength)
            let tag = ciphertext.suffix(Noise.tagLength)
            do {
                switch self {
                case .chaChaPoly:
                    let box = try ChaChaPoly.SealedBox(
                        nonce: ChaChaPoly.Nonce(data: nonceBytes(nonce)), ciphertext: body, tag: tag)
                    return try ChaChaPoly.open(box, using: key, authenticating: ad)
                case .aesGCM:
                    let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonceBytes(nonce)), ciphertext: body, tag: tag)
                    return try AES.GCM.open(box, using: key, authenticating: ad)
                }
            } catch {
                throw .decryptionFailed
            }
        }

        /// The 96-bit nonce: four zero bytes, then `n` in the cipher's byte order (sections 12.1, 12.2).
        func nonceBytes(_ n: UInt64) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 12)
            for i in 0..<8 {
                let byte = UInt8(truncatingIfNeeded: n >> (8 * UInt64(i)))
                switch self {
                case .chaChaPoly: bytes[4 + i] = byte
                case .aesGCM: bytes[11 - i] = byte
                }
            }
            return bytes
        }
    }
}
