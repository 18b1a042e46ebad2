import Crypto
import Foundation

/// The two AEADs of the native formats, behind one interface. Nonces are 12 bytes, tags 16.
enum AEAD {
    static let nonceByteCount = 12
    static let tagByteCount = 16

    /// Appends `ciphertext || tag` of `plaintext` to `output`, under an explicit nonce (stream chunks).
    static func seal<P: DataProtocol, A: DataProtocol>(
        _ algorithm: Envelope.Algorithm, _ plaintext: P, key: SymmetricKey, nonce: some ContiguousBytes,
        authenticating ad: A, appendingTo output: inout Data
    ) throws(SecureCoreError) {
        let nonceData = nonce.withUnsafeBytes { Data($0) }
        let combined: Data
        do {
            switch algorithm {
            case .aes256GCM:
                combined = try AES.GCM.seal(plaintext, using: key, nonce: try AES.GCM.Nonce(data: nonceData), authenticating: ad).combined!
            case .chaCha20Poly1305:
                combined = try ChaChaPoly.seal(plaintext, using: key, nonce: try ChaChaPoly.Nonce(data: nonceData), authenticating: ad).combined
            }
        } catch {
            throw .invalidParameter("the \(algorithm) key must be \(Envelope.keyByteCount) bytes and the nonce \(nonceByteCount)")
        }
        output.append(combined[(combined.startIndex + nonceByteCount)...])
    }

    /// Appends `nonce || ciphertext || tag` of `plaintext` to `output`, under a fresh random nonce
    /// from swift-crypto (one allocation fewer than drawing the nonce separately).
    static func sealWithRandomNonce<P: DataProtocol, A: DataProtocol>(
        _ algorithm: Envelope.Algorithm, _ plaintext: P, key: SymmetricKey, authenticating ad: A,
        appendingTo output: inout Data
    ) throws(SecureCoreError) {
        do {
            switch algorithm {
            case .aes256GCM:
                // `combined` is nil only for non-12-byte nonces, which swift-crypto's default never is.
                output.append(try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(), authenticating: ad).combined!)
            case .chaCha20Poly1305:
                output.append(try ChaChaPoly.seal(plaintext, using: key, nonce: ChaChaPoly.Nonce(), authenticating: ad).combined)
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
