import Foundation
import SecureCore

/// Encodings a key can be written in. Public formats accept a private key (its public half is
/// written); private formats need a private key.
public enum KeyExportFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    /// X.509 SubjectPublicKeyInfo, PEM `PUBLIC KEY`.
    case spkiPEM = "spki-pem"
    /// X.509 SubjectPublicKeyInfo, DER.
    case spkiDER = "spki-der"
    /// PKCS#1, PEM (`RSA PUBLIC KEY` for a public key, `RSA PRIVATE KEY` for a private key). RSA only.
    case pkcs1 = "pkcs1"
    /// PKCS#1, DER. RSA only.
    case pkcs1DER = "pkcs1-der"
    /// PKCS#8, PEM `PRIVATE KEY`.
    case pkcs8 = "pkcs8"
    /// PKCS#8, DER.
    case pkcs8DER = "pkcs8-der"
    /// Encrypted PKCS#8 (PBES2, PBKDF2-HMAC-SHA256, AES-256-CBC), PEM `ENCRYPTED PRIVATE KEY`.
    case pkcs8Encrypted = "pkcs8-encrypted"
    /// OpenSSH public key line.
    case openssh = "openssh"
    /// JSON Web Key (private when the key is private).
    case jwk = "jwk"
    /// Uncompressed X9.63 EC point. P-256/384/521 only.
    case x963 = "x963"

    /// A short human-readable name; never contains key material.

    /// The format's name as the CLI spells it.
    public var description: String { rawValue }

    /// True when the format is for private keys only (PKCS#8, plain or encrypted), which a public
    /// key cannot be exported as. Not whether an export holds private key material: `pkcs1`,
    /// `pkcs1DER` and `jwk` hold it too when a private key is exported in them (`openssh` and
    /// `x963` hold its public half).
    public var isPrivate: Bool { [.pkcs8, .pkcs8DER, .pkcs8Encrypted].contains(self) }
}

extension AsymmetricPublicKey {
    /// The key in `format`. Throws `notApplicable` for private formats and for formats the key type
    /// lacks (PKCS#1 for non-RSA keys, OpenSSH for X25519, X9.63 for non-NIST keys).
    public func exported(as format: KeyExportFormat) throws(KeyError) -> Data {
        switch format {
        case .spkiPEM: return Data(PEM.encode(spkiDERRepresentation, label: "PUBLIC KEY").utf8)
        case .spkiDER: return spkiDERRepresentation
        case .pkcs1: return Data(PEM.encode(try rsaKey().pkcs1DERRepresentation, label: "RSA PUBLIC KEY").utf8)
        case .pkcs1DER: return try rsaKey().pkcs1DERRepresentation
        case .openssh: return Data((try OpenSSHPublicKey.encode(self) + "\n").utf8)
        case .jwk: return Data((try JSONWebKey.encode(self) + "\n").utf8)
        case .x963:
            switch self {
            case .p256(let key): return key.x963Representation
            case .p384(let key): return key.x963Representation
            case .p521(let key): return key.x963Representation
            default: throw KeyError.notApplicable("X9.63 is for P-256/384/521 keys, not \(type)")
            }
        case .pkcs8, .pkcs8DER, .pkcs8Encrypted:
            throw KeyError.notApplicable("\(format) needs a private key")
        }
    }

    private func rsaKey() throws(KeyError) -> RSAPublicKey {
        guard case .rsa(let key) = self else { throw KeyError.notApplicable("PKCS#1 is for RSA keys, not \(type)") }
        return key
    }
}

extension AsymmetricPrivateKey {
    /// The key in `format`; public formats write the public half. `pkcs8Encrypted` needs
    /// `passphrase` and uses `iterations` PBKDF2 rounds. The result holds secret material for private formats.
    /// Throws `KeyError.notApplicable` when the format does not fit the key, `passphraseRequired` for
    /// `pkcs8Encrypted` without a passphrase, `costAboveCeiling` for iterations out of range.
    public func exported(
        as format: KeyExportFormat, passphrase: SecretBytes? = nil, iterations: Int = EncryptedPKCS8.defaultIterations
    ) throws(KeyError) -> SecretBytes {
        switch format {
        case .pkcs8:
            return pkcs8DERRepresentation.withUnsafeBytes { SecretBytes(Data(PEM.encode($0, label: "PRIVATE KEY").utf8)) }
        case .pkcs8DER:
            return pkcs8DERRepresentation
        case .pkcs8Encrypted:
            guard let passphrase else { throw KeyError.passphraseRequired }
            let der = try passphrase.withUnsafeBytes { bytes throws(KeyError) in try EncryptedPKCS8.encrypt(self, passphrase: Array(bytes), iterations: iterations) }
            return SecretBytes(Data(PEM.encode(der, label: "ENCRYPTED PRIVATE KEY").utf8))
        case .pkcs1, .pkcs1DER:
            guard case .rsa(let key) = self else { throw KeyError.notApplicable("PKCS#1 is for RSA keys, not \(type)") }
            if format == .pkcs1DER { return key.pkcs1DERRepresentation }
            return key.pkcs1DERRepresentation.withUnsafeBytes { SecretBytes(Data(PEM.encode($0, label: "RSA PRIVATE KEY").utf8)) }
        case .jwk:
            return SecretBytes(Data((try JSONWebKey.encode(self) + "\n").utf8))
        case .spkiPEM, .spkiDER, .openssh, .x963:
            return SecretBytes(try publicKey.exported(as: format))
        }
    }
}
