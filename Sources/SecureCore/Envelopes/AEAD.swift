import Crypto
import Foundation

/// The two AEADs of the native formats, behind one interface. Nonces are 12 bytes, tags 16.
enum AEAD {
    static let nonceByteCount = 12
    static let tagByteCount = 16

    /// `nonce || ciphertext || tag` of `plaintext` (swift-crypto's combined form), under `nonce`
    /// (12 bytes) or, when nil, a fresh random nonce from swift-crypto.
    static func seal(
        _ algorithm: Envelope.Algorithm, _ plaintext: some DataProtocol, key: SymmetricKey, nonce: UnsafeRawBufferPointer? = nil,
        authenticating ad: some DataProtocol
    ) throws(SecureCoreError) -> Data {
        // swift-crypto takes longer nonces too, but then has no combined form.
        guard nonce.map({ $0.count == nonceByteCount }) ?? true else { throw .invalidParameter("the nonce must be \(nonceByteCount) bytes") }
        do {
            switch algorithm {
            case .aes256GCM:
                let nonce = try nonce.map { try AES.GCM.Nonce(data: $0) } ?? AES.GCM.Nonce()
                // `combined` is nil only for nonces that are not 12 bytes (checked above).
                return try AES.GCM.seal(plaintext, using: key, nonce: nonce, authenticating: ad).combined!
            case .chaCha20Poly1305:
                let nonce = try nonce.map { try ChaChaPoly.Nonce(data: $0) } ?? ChaChaPoly.Nonce()
                return try ChaChaPoly.seal(plaintext, using: key, nonce: nonce, authenticating: ad).combined
            }
        } catch {
            throw .invalidParameter("the \(algorithm) key must be \(Envelope.keyByteCount) bytes")
        }
    }

    /// Opens `nonce || ciphertext || tag` (at least 28 bytes); throws `authenticationFailed` on any mismatch.
    static func open<A: DataProtocol>(
        _ algorithm: Envelope.Algorithm, combined: Data, key: SymmetricKey, authenticating ad: A
    ) throws(SecureCoreError) -> Data {
        do {
            switch algorithm {
            case .aes256GCM:
                return try AES.GCM.open(try AES.GCM.SealedBox(combined: combined), using: key, authenticating: ad)
            case .chaCha20Poly1305:
                return try ChaChaPoly.open(try ChaChaPoly.SealedBox(combined: combined), using: key, authenticating: ad)
            }
        } catch {
            throw SecureCoreError.authenticationFailed
        }
    }

    /// Opens `ciphertextAndTag` (at least 16 bytes) under a separate nonce.
    static func open<A: DataProtocol>(
        _ algorithm: Envelope.Algorithm, _ ciphertextAndTag: Data, key: SymmetricKey, nonce: some ContiguousBytes,
        authenticating ad: A
    ) throws(SecureCoreError) -> Data {
        var combined = nonce.withUnsafeBytes { Data($0) }
        combined.append(ciphertextAndTag)
        return try open(algorithm, combined: combined, key: key, authenticating: ad)
    }
}
