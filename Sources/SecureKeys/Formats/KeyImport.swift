import Crypto
import Foundation
import SecureCore
import SwiftASN1

/// A key read by `KeyImport`, public or private.
public enum ImportedKey: Sendable {
    /// The input held only a public key.
    case `public`(AsymmetricPublicKey)
    /// The input held a private key (its public key is derived from it).
    case `private`(AsymmetricPrivateKey)

    /// The public key (derived from the private key when needed).
    public var publicKey: AsymmetricPublicKey {
        switch self {
        case .public(let key): key
        case .private(let key): key.publicKey
        }
    }
}

/// Reads a key in any supported encoding, detecting the format: PEM (`PUBLIC KEY`, `RSA PUBLIC KEY`,
/// `PRIVATE KEY`, `RSA PRIVATE KEY`, `EC PRIVATE KEY` optionally preceded by `EC PARAMETERS` as
/// `openssl ecparam -genkey` writes it, `ENCRYPTED PRIVATE KEY`), DER (SPKI, PKCS#8, encrypted PKCS#8,
/// PKCS#1), base64 of DER, OpenSSH public key lines, unencrypted OpenSSH private key files
/// (`openssh-key-v1`), JWK, and raw X9.63 EC points.
public enum KeyImport {
    /// Reads any key. `passphrase` opens encrypted PKCS#8; its PBKDF2 cost is checked against `limits`.
    /// Throws `KeyError`: `unrecognizedKeyFormat`, a format's own case (`malformedPEM`, `malformedDER`, `sshKey`, `openSSHKeyFile`, `malformedJWK`, ...), `passphraseRequired`, `wrongPassphrase` or `costAboveCeiling`.
    public static func key(
        from input: some DataProtocol, passphrase: SecretBytes? = nil, limits: KDFLimits = .default
    ) throws(KeyError) -> ImportedKey {
        let data = Data(input)
        if let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty {
            if text.hasPrefix(ECParameters.begin) { return try ECParameters.keyAfterParameters(text) }
            if text.hasPrefix(OpenSSHPrivateKeyFile.begin) { return .private(try openSSHPrivateKey(text)) }
            if text.hasPrefix("-----BEGIN ") { return try pem(text, passphrase: passphrase, limits: limits) }
            if text.hasPrefix("{") { return try JSONWebKey.decode(data) }
            if text.hasPrefix("ssh-") || text.hasPrefix("ecdsa-sha2-") { return .public(try OpenSSHPublicKey.decode(text)) }
            if let der = try? Base64.decode(text), der.first == 0x30 {
                return try self.der(der, passphrase: passphrase, limits: limits)
            }
        }
        if data.first == 0x30 { return try der(data, passphrase: passphrase, limits: limits) }
        if data.first == 0x04, [65, 97, 133].contains(data.count) { return .public(try x963PublicKey(data)) }
        throw KeyError.unrecognizedKeyFormat
    }

    /// Reads a public key, or the public half of a private key.
    /// Throws as `key(from:passphrase:limits:)`; an encrypted private key is `wrongKeyType`.
    public static func publicKey(from input: some DataProtocol) throws(KeyError) -> AsymmetricPublicKey {
        do {
            return try key(from: input).publicKey
        } catch .passphraseRequired {
            throw .wrongKeyType(expected: "a public key", found: "an encrypted private key")
        } catch {
            throw error
        }
    }

    /// Reads a private key; a public key is a `wrongKeyType` error.
    public static func privateKey(
        from input: some DataProtocol, passphrase: SecretBytes? = nil, limits: KDFLimits = .default
    ) throws(KeyError) -> AsymmetricPrivateKey {
        switch try key(from: input, passphrase: passphrase, limits: limits) {
        case .private(let key): return key
        case .public: throw KeyError.wrongKeyType(expected: "a private key", found: "a public key")
        }
    }

    /// An uncompressed X9.63 point (`04 || X || Y`) on P-256, P-384 or P-521, chosen by its length.
    /// Throws `KeyError.invalidKey` for another length or a point not on the curve.
    public static func x963PublicKey(_ point: some DataProtocol) throws(KeyError) -> AsymmetricPublicKey {
        let bytes = Data(point)
        switch bytes.count {
        case 65: return .p256(try curveKey { try P256.Signing.PublicKey(x963Representation: bytes) })
        case 97: return .p384(try curveKey { try P384.Signing.PublicKey(x963Representation: bytes) })
        case 133: return .p521(try curveKey { try P521.Signing.PublicKey(x963Representation: bytes) })
        default: throw KeyError.invalidKey("an X9.63 point is 65, 97 or 133 bytes, not \(bytes.count)")
        }
    }

    private static func pem(_ text: String, passphrase: SecretBytes?, limits: KDFLimits) throws(KeyError) -> ImportedKey {
        let document: PEM.Document
        do {
            document = try PEM.decode(text)
        } catch {
            throw .pem(error)
        }
        let der = document.der
        switch document.label {
        case "PUBLIC KEY": return .public(try AsymmetricPublicKey(spkiDERRepresentation: der))
        case "RSA PUBLIC KEY": return .public(.rsa(try RSAPublicKey(pkcs1DERRepresentation: der)))
        case "PRIVATE KEY": return .private(try AsymmetricPrivateKey(pkcs8DERRepresentation: der))
        case "RSA PRIVATE KEY": return .private(.rsa(try RSAPrivateKey(pkcs1DERRepresentation: der)))
        case "EC PRIVATE KEY": return .private(try sec1PrivateKey(der))
        case "ENCRYPTED PRIVATE KEY": return .private(try encrypted(der, passphrase: passphrase, limits: limits))
        default: throw KeyError.malformedPEM("unsupported PEM label \(document.label)")
        }
    }

    /// DER of unknown type: the outer structure decides which parser gets the bytes, so errors come
    /// from the parser the input was meant for.
    private static func der(_ der: Data, passphrase: SecretBytes?, limits: KDFLimits) throws(KeyError) -> ImportedKey {
        let bytes = Array(der)
        let node: ASN1Node
        do {
            node = try DER.parse(bytes)
        } catch {
            throw KeyError.malformedDER(ASN1ErrorText.clean(error))
        }
        guard case .constructed(let children) = node.content, node.identifier == .sequence else {
            throw KeyError.malformedDER("a key is a SEQUENCE")
        }
        let identifiers = children.map(\.identifier)
        switch identifiers.first {
        case .sequence?:
            // SPKI { AlgorithmIdentifier, BIT STRING } or EncryptedPrivateKeyInfo { AlgorithmIdentifier, OCTET STRING }.
            if identifiers.count == 2, identifiers[1] == .octetString {
                return .private(try encrypted(der, passphrase: passphrase, limits: limits))
            }
            return .public(try AsymmetricPublicKey(spkiDERRepresentation: der))
        case .integer?:
            // SEC1 ECPrivateKey's version and scalar, without its optional parts, also count two.
            if identifiers.count == 2, identifiers[1] != .octetString { return .public(.rsa(try RSAPublicKey(pkcs1DERRepresentation: der))) }
            if identifiers.count == 9 { return .private(.rsa(try RSAPrivateKey(pkcs1DERRepresentation: der))) }
            if identifiers.count >= 3, identifiers[1] == .sequence { return .private(try AsymmetricPrivateKey(pkcs8DERRepresentation: der)) }
            if identifiers.count >= 2, identifiers[1] == .octetString { return .private(try sec1PrivateKey(der)) }
            throw KeyError.malformedDER("unrecognized key structure")
        default:
            throw KeyError.malformedDER("unrecognized key structure")
        }
    }

    private static func encrypted(_ der: Data, passphrase: SecretBytes?, limits: KDFLimits) throws(KeyError) -> AsymmetricPrivateKey {
        guard let passphrase else { throw KeyError.passphraseRequired }
        return try passphrase.withUnsafeBytes { bytes throws(KeyError) in try EncryptedPKCS8.decrypt(der, passphrase: Array(bytes), limits: limits) }
    }

    /// SEC1 `ECPrivateKey` (RFC 5915, `openssl ec` output): the curve it names (else the one of its
    /// scalar's length), and its public key, when present, the scalar's own.
    static func sec1PrivateKey(_ der: Data) throws(KeyError) -> AsymmetricPrivateKey {
        try .ecPrivateKey(DER.decode(ECPrivateKeyStructure.self, from: der, what: "SEC1 EC private key"), curve: nil)
    }
}
