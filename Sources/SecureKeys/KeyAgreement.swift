import Crypto
import Foundation
import SecureCore

extension AsymmetricPrivateKey {
    /// The raw Diffie-Hellman shared secret (X25519, or the x-coordinate for P-256/384/521) with
    /// `peer`, which must be of the same type. Throws `wrongKeyType`, or `invalidKey` when the
    /// result is degenerate (for example an all-zero X25519 output from a low-order point).
    /// Use a KDF (HKDF) on the result; never use it as a key directly.
    public func sharedSecret(with peer: AsymmetricPublicKey) throws -> SecretBytes {
        let secret: SharedSecret
        do {
            switch (self, peer) {
            case (.x25519(let own), .x25519(let theirs)):
                secret = try own.sharedSecretFromKeyAgreement(with: theirs)
            case (.p256(let own), .p256(let theirs)):
                secret = try P256.KeyAgreement.PrivateKey(rawRepresentation: own.rawRepresentation)
                    .sharedSecretFromKeyAgreement(with: P256.KeyAgreement.PublicKey(rawRepresentation: theirs.rawRepresentation))
            case (.p384(let own), .p384(let theirs)):
                secret = try P384.KeyAgreement.PrivateKey(rawRepresentation: own.rawRepresentation)
                    .sharedSecretFromKeyAgreement(with: P384.KeyAgreement.PublicKey(rawRepresentation: theirs.rawRepresentation))
            case (.p521(let own), .p521(let theirs)):
                secret = try P521.KeyAgreement.PrivateKey(rawRepresentation: own.rawRepresentation)
                    .sharedSecretFromKeyAgreement(with: P521.KeyAgreement.PublicKey(rawRepresentation: theirs.rawRepresentation))
            default:
                throw KeyError.wrongKeyType(expected: "a \(type) peer key for key agreement", found: peer.type.rawValue)
            }
        } catch let error as KeyError {
            throw error
        } catch {
            throw KeyError.invalidKey("key agreement failed: \(error)")
        }
        return secret.withUnsafeBytes { SecretBytes($0) }
    }
}
