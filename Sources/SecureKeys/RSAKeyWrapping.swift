import Foundation
import SecureCore
import CryptoExtras

/// RSA-OAEP paddings for wrapping short secrets (keys) with an RSA public key. The label is empty.
public enum RSAOAEPPadding: Sendable, CustomStringConvertible {
    /// OAEP with SHA-256 and MGF1-SHA-256: the default.
    case sha256
    /// LEGACY: OAEP with SHA-1 and MGF1-SHA-1 (Heimdall, older peers).
    case legacySHA1

    var backing: _RSA.Encryption.Padding { self == .sha256 ? .PKCS1_OAEP_SHA256 : .PKCS1_OAEP }

    /// A short human-readable name; never contains key material.

    /// The padding's name, for example `RSA-OAEP-SHA256`.
    public var description: String { self == .sha256 ? "RSA-OAEP-SHA256" : "RSA-OAEP-SHA1" }
}

extension RSAPublicKey {
    /// Encrypts `secret` (at most `modulusBytes - 66` bytes for SHA-256) with RSA-OAEP.
    /// Throws `invalidKey` when the secret is too long for the key.
    public func wrap(_ secret: SecretBytes, padding: RSAOAEPPadding = .sha256) throws(KeyError) -> Data {
        do {
            return try secret.withUnsafeBytes { try encryptionKey.encrypt(Data($0), padding: padding.backing) }
        } catch {
            throw KeyError.invalidKey("\(padding) cannot wrap \(secret.count) bytes with RSA-\(keySize.rawValue)")
        }
    }
}

extension RSAPrivateKey {
    /// Decrypts an RSA-OAEP ciphertext. Throws `authenticationFailed` for any padding or length
    /// error (one error for all, so the failure reveals nothing about the padding).
    public func unwrap(_ ciphertext: some DataProtocol, padding: RSAOAEPPadding = .sha256) throws(KeyError) -> SecretBytes {
        guard ciphertext.count == publicKey.modulusByteCount else { throw KeyError.authenticationFailed }
        do {
            return SecretBytes(try decryptionKey.decrypt(ciphertext, padding: padding.backing))
        } catch {
            throw KeyError.authenticationFailed
        }
    }
}
