import Crypto
import Foundation

/// The two AEADs of the native formats, behind one interface. Nonces are 12 bytes, tags 16.
enum AEAD {
    static let nonceByteCount = 12
    static let tagByteCount = 16

    /// Appends `ciphertext || tag` of `plaintext` to `output`.
    static func seal<P: DataProtocol, A: DataProtocol>(
        _ algorithm: Envelope.Algorithm, _ plaintext: P, key: SymmetricKey, nonce: some ContiguousBytes,
        authenticating ad: A, appendingTo output: inout Data
    ) throws {
        let nonceData = nonce.withUnsafeBytes { Data($0) }
        switch algorithm {
        case .aes256GCM:
            let box = try AES.GCM.seal(plaintext, using: key, nonce: try AES.GCM.Nonce(data: nonceData), authenticating: ad)
            output.append(box.ciphertext)
            output.append(box.tag)
        case .chaCha20Poly1305:
            let box = try ChaChaPoly.seal(plaintext, using: key, nonce: try ChaChaPoly.Nonce(data: nonceData), authenticating: ad)
            output.append(box.ciphertext)
            output.append(box.tag)
        }
    }

    /// Opens `nonce || ciphertext || tag` (at least 28 bytes); throws `authenticationFailed` on any mismatch.
    static func open<A: DataProtocol>(
        _ algorithm: Envelope.Algorithm, combined: Data, key: SymmetricKey, authenticating ad: A
    ) throws -> Data {
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
    ) throws -> Data {
        var combined = nonce.withUnsafeBytes { Data($0) }
        combined.append(ciphertextAndTag)
        return try open(algorithm, combined: combined, key: key, authenticating: ad)
    }
}
