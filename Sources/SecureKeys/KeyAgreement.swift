import Crypto
import Foundation
import SecureCore

extension AsymmetricPrivateKey {
    /// The raw Diffie-Hellman shared secret (X25519, or the x-coordinate for P-256/384/521) with
    /// `peer`, which must be of the same type. Throws `wrongKeyType`, or `invalidKey` when the
    /// result is degenerate (for example an all-zero X25519 output from a low-order point).
    /// Use a KDF (HKDF) on the result; never use it as a key directly.
    public func sharedSecret(with peer: AsymmetricPublicKey) throws(KeyError) -> SecretBytes {
        guard type == peer.type, let own = agreementRawRepresentation, let theirs = peer.agreementRawRepresentation else {
            throw KeyError.wrongKeyType(expected: "a \(type) peer key for key agreement", found: peer.type.rawValue)
        }
        let secret: SharedSecret? =
            switch self {
            case .x25519:
                try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: own)
                    .nonZeroSharedSecret(with: Curve25519.KeyAgreement.PublicKey(rawRepresentation: theirs))
            case .p256: try? Self.agree(own, theirs, as: P256.KeyAgreement.PrivateKey.self)
            case .p384: try? Self.agree(own, theirs, as: P384.KeyAgreement.PrivateKey.self)
            default: try? Self.agree(own, theirs, as: P521.KeyAgreement.PrivateKey.self)
            }
        guard let secret else {
            throw KeyError.invalidKey("key agreement failed: the peer's public key is not a valid point, or the shared secret is zero (a low-order point)")
        }
        return secret.withUnsafeBytes { SecretBytes($0) }
    }

    private static func agree<SK: RawAgreementPrivateKey>(_ own: Data, _ theirs: Data, as _: SK.Type) throws -> SharedSecret {
        try SK(rawRepresentation: own).sharedSecretFromKeyAgreement(with: SK.PublicKey(rawRepresentation: theirs))
    }
}
