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

    /// Opens `ciphertextAndTag` (at least 16 bytes); throws `authenticationFailed` on any mismatch.
    static func open<A: DataProtocol>(
        _ algorithm: Envelope.Algorithm, _ ciphertextAndTag: Data, key: SymmetricKey, nonce: some ContiguousBytes,
        authenticating ad: A
    ) throws -> Data {
        let nonceData = nonce.withUnsafeBytes { Data($0) }
        let split = ciphertextAndTag.endIndex - tagByteCount
        let ciphertext = ciphertextAndTag[ciphertextAndTag.startIndex..<split]
        let tag = ciphertextAndTag[split...]
        do {
            switch algorithm {
            case .aes256GCM:
                let box = try AES.GCM.SealedBox(nonce: try AES.GCM.Nonce(data: nonceData), ciphertext: ciphertext, tag: tag)
                return try AES.GCM.open(box, using: key, authenticating: ad)
            case .chaCha20Poly1305:
                let box = try ChaChaPoly.SealedBox(nonce: try ChaChaPoly.Nonce(data: nonceData), ciphertext: ciphertext, tag: tag)
                return try ChaChaPoly.open(box, using: key, authenticating: ad)
            }
        } catch {
            throw SecureCoreError.authenticationFailed
        }
    }
}
