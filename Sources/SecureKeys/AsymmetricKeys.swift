import Crypto
import Foundation
import SecureCore

/// The kinds of asymmetric key this module handles. `rsa1024` is accepted only by the legacy
/// Heimdall operations; the raw values are the names `sf key generate --type` takes.
public enum KeyType: String, Sendable, CaseIterable, CustomStringConvertible {
    /// RSA keys of 1024 (legacy), 2048, 3072 and 4096 bits.
    case rsa1024, rsa2048, rsa3072, rsa4096
    /// NIST curves P-256, P-384 and P-521 (ECDSA and ECDH/HPKE).
    case p256, p384, p521
    /// Ed25519 (signatures) and X25519 (key agreement, HPKE).
    case ed25519, x25519

    /// A short human-readable name; never contains key material.

    /// The algorithm's name as the CLI and key files spell it.
    public var description: String { rawValue }

    init(_ size: RSAKeySize) {
        switch size {
        case .legacy1024: self = .rsa1024
        case .bits2048: self = .rsa2048
        case .bits3072: self = .rsa3072
        case .bits4096: self = .rsa4096
        }
    }
}

/// A public key of any supported type. P-256/384/521 keys serve both ECDSA and ECDH/HPKE (the
/// encodings do not say which); Ed25519 keys only sign; X25519 keys only agree on keys.
public enum AsymmetricPublicKey: Sendable {
    /// An RSA key (one case for every size; see `RSAKeySize`).
    case rsa(RSAPublicKey)
    /// A NIST curve or Curve25519 key, as the swift-crypto type.
    case p256(P256.Signing.PublicKey)
    case p384(P384.Signing.PublicKey)
    case p521(P521.Signing.PublicKey)
    case ed25519(Curve25519.Signing.PublicKey)
    case x25519(Curve25519.KeyAgreement.PublicKey)

    /// The key's type.
    public var type: KeyType {
        switch self {
        case .rsa(let key): KeyType(key.keySize)
        case .p256: .p256
        case .p384: .p384
        case .p521: .p521
        case .ed25519: .ed25519
        case .x25519: .x25519
        }
    }

    /// SHA-256 of the X.509 SubjectPublicKeyInfo DER: the key's identity in messages and listings.
    public var fingerprint: KeyFingerprint { KeyFingerprint(bytes: Hashing.hash(spkiDERRepresentation, with: .sha256)) }
}

/// A private key of any supported type, with the matching public key.
public enum AsymmetricPrivateKey: Sendable {
    /// An RSA key (one case for every size; see `RSAKeySize`).
    case rsa(RSAPrivateKey)
    /// A NIST curve or Curve25519 key, as the swift-crypto type.
    case p256(P256.Signing.PrivateKey)
    case p384(P384.Signing.PrivateKey)
    case p521(P521.Signing.PrivateKey)
    case ed25519(Curve25519.Signing.PrivateKey)
    case x25519(Curve25519.KeyAgreement.PrivateKey)

    /// Generates a new key of `type` from the system's secure random source.
    /// Throws `KeyError.unsupportedKeySize` when swift-crypto cannot generate an RSA key of this size.
    public static func generate(_ type: KeyType) throws(KeyError) -> AsymmetricPrivateKey {
        switch type {
        case .rsa1024: .rsa(try RSAPrivateKey(keySize: .legacy1024))
        case .rsa2048: .rsa(try RSAPrivateKey(keySize: .bits2048))
        case .rsa3072: .rsa(try RSAPrivateKey(keySize: .bits3072))
        case .rsa4096: .rsa(try RSAPrivateKey(keySize: .bits4096))
        case .p256: .p256(P256.Signing.PrivateKey())
        case .p384: .p384(P384.Signing.PrivateKey())
        case .p521: .p521(P521.Signing.PrivateKey())
        case .ed25519: .ed25519(Curve25519.Signing.PrivateKey())
        case .x25519: .x25519(Curve25519.KeyAgreement.PrivateKey())
        }
    }

    /// The key's type.
    public var type: KeyType { publicKey.type }

    /// The matching public key.
    public var publicKey: AsymmetricPublicKey {
        switch self {
        case .rsa(let key): .rsa(key.publicKey)
        case .p256(let key): .p256(key.publicKey)
        case .p384(let key): .p384(key.publicKey)
        case .p521(let key): .p521(key.publicKey)
        case .ed25519(let key): .ed25519(key.publicKey)
        case .x25519(let key): .x25519(key.publicKey)
        }
    }
}

/// SHA-256 of a public key's SubjectPublicKeyInfo DER, shown as lowercase hex or base64.
public struct KeyFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let bytes: Data

    /// Lowercase hex of the digest.
    public var hex: String { Hex.encode(bytes) }
    /// Padded standard base64 of the digest.
    public var base64: String { Base64.encode(bytes) }
    /// `sha256-spki:` followed by the lowercase hex digest (docs/FORMATS.md, "Key fingerprints").
    /// Deliberately unlike OpenSSH's `SHA256:<base64>`, which hashes another encoding of the key
    /// (see `AsymmetricPublicKey.openSSHFingerprint`).
    public var description: String { "sha256-spki:\(hex)" }

    /// Parses a fingerprint as `description` prints it (`sha256-spki:` and 64 hex digits, either
    /// case) or as the 64 hex digits alone; nil for anything else.
    public init?(parsing text: String) {
        let prefix = "sha256-spki:"
        let digits = text.lowercased().hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text
        guard digits.utf8.count == 64, let bytes = try? Hex.decode(digits), bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    init(bytes: Data) { self.bytes = bytes }
}
