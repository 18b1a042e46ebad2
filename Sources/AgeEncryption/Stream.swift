import Crypto
import Foundation
import SecureCore

/// age's payload on SecureCore's STREAM engine: 64 KiB chunks sealed with ChaCha20-Poly1305 under
/// the payload key, without associated data, and the STREAM nonce `counter (11 bytes, big-endian)
/// || last-chunk flag (1 byte)`. This file keeps only age's key schedule and error mapping.
enum Stream {
    static let payloadNonceSize = 16

    /// HKDF-SHA-256(ikm = file key, salt = nonce, info = "payload").
    static func payloadKey(fileKey: SecretBytes, nonce: some DataProtocol) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: fileKey.symmetricKey, salt: nonce, info: Data("payload".utf8), outputByteCount: 32)
    }

    /// The payload STREAM for `fileKey` and the header's payload `nonce`.
    static func payload(fileKey: SecretBytes, nonce: some DataProtocol) -> STREAM {
        STREAM(algorithm: .chaCha20Poly1305, key: payloadKey(fileKey: fileKey, nonce: nonce))
    }
}

extension AgeError {
    /// age's report of a STREAM failure.
    init(_ error: STREAMError) {
        switch error {
        case .truncated: self = .truncated
        case .trailingData: self = .trailingData
        case .authenticationFailed(let chunk): self = .payloadAuthenticationFailed(chunk: chunk)
        case .emptyFinalChunk: self = .emptyFinalChunk
        }
    }
}

/// Runs `body`, reporting STREAM failures as `AgeError`.
func payloadErrors<R>(_ body: () throws -> R) throws -> R {
    do {
        return try body()
    } catch let error as STREAMError {
        throw AgeError(error)
    }
}
