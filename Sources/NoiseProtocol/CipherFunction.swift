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
            // `combined` is nonce || ciphertext || tag: drop the nonce.
            switch self {
            case .chaChaPoly:
                let box = withNonce(nonce) { try! ChaChaPoly.seal(plaintext, using: key, nonce: ChaChaPoly.Nonce(data: $0), authenticating: ad) }
                return Data(box.combined.dropFirst(Self.nonceLength))
            case .aesGCM:
                let box = withNonce(nonce) { try! AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(data: $0), authenticating: ad) }
                return Data(box.combined!.dropFirst(Self.nonceLength))
            }
        }

        /// ENCRYPT(k, n, zerolen, plaintext) written into `output` (ciphertext then the 16-byte tag,
        /// `plaintext.count + 16` bytes, which `output` must have room for); the transport path,
        /// with no buffer of its own between swift-crypto's sealed box and `output`.
        func encrypt(key: SymmetricKey, nonce: UInt64, plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer)
            -> Int
        {
            let combined: Data
            switch self {
            case .chaChaPoly:
                combined = withNonce(nonce) { try! ChaChaPoly.seal(plaintext, using: key, nonce: ChaChaPoly.Nonce(data: $0)) }.combined
            case .aesGCM:
                combined = withNonce(nonce) { try! AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(data: $0)) }.combined!
            }
            return combined.withUnsafeBytes { sealed in
                let body = UnsafeRawBufferPointer(rebasing: sealed.dropFirst(Self.nonceLength))
                precondition(body.count <= output.count, "output too small for the sealed message")
                output.copyMemory(from: body)
                return body.count
            }
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
                    let box = try withNonce(nonce) { try ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: $0), ciphertext: body, tag: tag) }
                    return try ChaChaPoly.open(box, using: key, authenticating: ad)
                case .aesGCM:
                    let box = try withNonce(nonce) { try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: $0), ciphertext: body, tag: tag) }
                    return try AES.GCM.open(box, using: key, authenticating: ad)
                }
            } catch {
                throw .decryptionFailed
            }
        }

        /// DECRYPT(k, n, zerolen, message) for a transport message (ciphertext then tag): the
        /// plaintext, or `decryptionFailed`. Builds the sealed box with one exact-size copy.
        func decrypt(key: SymmetricKey, nonce: UInt64, message: UnsafeRawBufferPointer) throws(NoiseError) -> Data {
            guard message.count >= Noise.tagLength else { throw .decryptionFailed }
            do {
                switch self {
                case .chaChaPoly:
                    // ChaChaPoly.SealedBox(nonce:ciphertext:tag:) grows its buffer twice; `combined:` takes one exact copy.
                    var combined = Data()
                    combined.reserveCapacity(Self.nonceLength + message.count)
                    withNonce(nonce) { combined.append($0.assumingMemoryBound(to: UInt8.self)) }
                    combined.append(message.assumingMemoryBound(to: UInt8.self))
                    return try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: combined), using: key)
                case .aesGCM:
                    let body = UnsafeRawBufferPointer(rebasing: message.dropLast(Noise.tagLength))
                    let tag = UnsafeRawBufferPointer(rebasing: message.suffix(Noise.tagLength))
                    let box = try withNonce(nonce) { try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: $0), ciphertext: body, tag: tag) }
                    return try AES.GCM.open(box, using: key)
                }
            } catch {
                throw .decryptionFailed
            }
        }

        /// The length of the 96-bit AEAD nonce.
        static let nonceLength = 12

        /// Calls `body` with the 96-bit nonce for counter `n`, built on the stack: four zero bytes,
        /// then `n` in the cipher's byte order (sections 12.1, 12.2).
        func withNonce<Result, Failure: Error>(_ n: UInt64, _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result)
            throws(Failure) -> Result
        {
            let low = UInt32(truncatingIfNeeded: n)
            let high = UInt32(truncatingIfNeeded: n >> 32)
            var words: (UInt32, UInt32, UInt32) =
                switch self {
                case .chaChaPoly: (0, low.littleEndian, high.littleEndian)
                case .aesGCM: (0, high.bigEndian, low.bigEndian)
                }
            return try withUnsafeBytes(of: &words) { (bytes) throws(Failure) -> Result in try body(bytes) }
        }
    }
}
