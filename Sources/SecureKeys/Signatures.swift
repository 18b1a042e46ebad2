import Crypto
import Foundation
import SecureCore
import CryptoExtras
import SecureRSA

/// How a signature is computed and encoded.
public enum SignatureScheme: String, Sendable, CaseIterable, CustomStringConvertible {
    /// RSASSA-PSS with SHA-256 and MGF1-SHA-256. The default for RSA. Signing uses a 32-byte salt
    /// (the digest length); verifying accepts any salt length (OpenSSL's `rsa_pss_saltlen:auto`), so
    /// signatures made with OpenSSL's default (`max`), pyca's `PSS.MAX_LENGTH` or a salt of 0 verify.
    case rsaPSS = "rsa-pss-sha256"
    /// RSASSA-PSS with SHA-384 and MGF1-SHA-384 (48-byte salt when signing, any when verifying).
    case rsaPSSSHA384 = "rsa-pss-sha384"
    /// RSASSA-PSS with SHA-512 and MGF1-SHA-512 (64-byte salt when signing, any when verifying).
    case rsaPSSSHA512 = "rsa-pss-sha512"
    /// RSASSA-PKCS1-v1_5 with SHA-256 (compatibility, and Heimdall's scheme).
    case rsaPKCS1v15 = "rsa-pkcs1v15-sha256"
    /// ECDSA with the curve's hash (SHA-256/384/512 for P-256/384/521), DER `Ecdsa-Sig-Value`. The default for EC.
    case ecdsaDER = "ecdsa-der"
    /// ECDSA as above, raw fixed-width `r || s` (IEEE P1363, JWS).
    case ecdsaRaw = "ecdsa-raw"
    /// Ed25519 (RFC 8032, pure). The only scheme for Ed25519 keys.
    case ed25519 = "ed25519"

    /// A short human-readable name; never contains key material.

    /// The signature algorithm's name as the CLI spells it.
    public var description: String { rawValue }

    /// The default scheme for keys of `type`; nil for X25519, which cannot sign.
    public static func `default`(for type: KeyType) -> SignatureScheme? {
        switch type {
        case .rsa1024, .rsa2048, .rsa3072, .rsa4096: .rsaPSS
        case .p256, .p384, .p521: .ecdsaDER
        case .ed25519: .ed25519
        case .x25519: nil
        }
    }
}

extension AsymmetricPrivateKey {
    /// Signs `message` with `scheme` (the key type's default when nil). Throws `wrongKeyType` when
    /// the scheme does not fit the key, and `unsupportedKeySize` for 1024-bit RSA (use `Heimdall`).
    public func signature(for message: some DataProtocol, scheme: SignatureScheme? = nil) throws(KeyError) -> Data {
        let scheme = try resolve(scheme, for: type)
        switch (self, scheme) {
        case (.rsa(let key), .rsaPSS), (.rsa(let key), .rsaPSSSHA384), (.rsa(let key), .rsaPSSSHA512), (.rsa(let key), .rsaPKCS1v15):
            guard key.publicKey.keySize.isModern else { throw KeyError.unsupportedKeySize(key.publicKey.keySize.rawValue) }
            return try key.signature(for: message, scheme: scheme)
        case (.p256(let key), .ecdsaDER): return try signing { try key.signature(for: message).derRepresentation }
        case (.p256(let key), .ecdsaRaw): return try signing { try key.signature(for: message).rawRepresentation }
        case (.p384(let key), .ecdsaDER): return try signing { try key.signature(for: message).derRepresentation }
        case (.p384(let key), .ecdsaRaw): return try signing { try key.signature(for: message).rawRepresentation }
        case (.p521(let key), .ecdsaDER): return try signing { try key.signature(for: message).derRepresentation }
        case (.p521(let key), .ecdsaRaw): return try signing { try key.signature(for: message).rawRepresentation }
        case (.ed25519(let key), .ed25519): return try signing { try key.signature(for: message) }
        default: throw KeyError.wrongKeyType(expected: "a key for \(scheme)", found: type.rawValue)
        }
    }

    /// Signs the UTF-8 bytes of `message` and returns padded standard base64, as Heimdall does.
    /// Throws as `signature(for:scheme:)` with bytes.
    public func signature(for message: String, scheme: SignatureScheme? = nil) throws(KeyError) -> String {
        Base64.encode(try signature(for: Data(message.utf8), scheme: scheme))
    }
}

extension AsymmetricPublicKey {
    /// True when `signature` is a valid `scheme` signature of `message` by this key. A scheme that
    /// does not fit the key, or a malformed signature, is simply not valid.
    public func isValidSignature(_ signature: some DataProtocol, for message: some DataProtocol, scheme: SignatureScheme? = nil) -> Bool {
        (try? verify(signature, for: message, scheme: scheme)) != nil
    }

    /// Verifies a base64 (Heimdall-style) signature of the UTF-8 bytes of `message`.
    public func isValidSignature(base64 signature: String, for message: String, scheme: SignatureScheme? = nil) -> Bool {
        guard let bytes = try? Base64.decode(signature) else { return false }
        return isValidSignature(bytes, for: Data(message.utf8), scheme: scheme)
    }

    /// Verifies, throwing `invalidSignature`, `malformedSignature` (wrong length or encoding for the
    /// scheme), `wrongKeyType` or `unsupportedKeySize` (1024-bit RSA).
    public func verify(_ signature: some DataProtocol, for message: some DataProtocol, scheme: SignatureScheme? = nil) throws(KeyError) {
        let scheme = try resolve(scheme, for: type)
        let valid: Bool
        switch (self, scheme) {
        case (.rsa(let key), .rsaPSS), (.rsa(let key), .rsaPSSSHA384), (.rsa(let key), .rsaPSSSHA512), (.rsa(let key), .rsaPKCS1v15):
            guard key.keySize.isModern else { throw KeyError.unsupportedKeySize(key.keySize.rawValue) }
            valid = try key.isValidSignature(signature, for: message, scheme: scheme)
        case (.p256(let key), .ecdsaDER): valid = key.isValidSignature(try ecdsa { try P256.Signing.ECDSASignature(derRepresentation: signature) }, for: message)
        case (.p256(let key), .ecdsaRaw): valid = key.isValidSignature(try ecdsa { try P256.Signing.ECDSASignature(rawRepresentation: signature) }, for: message)
        case (.p384(let key), .ecdsaDER): valid = key.isValidSignature(try ecdsa { try P384.Signing.ECDSASignature(derRepresentation: signature) }, for: message)
        case (.p384(let key), .ecdsaRaw): valid = key.isValidSignature(try ecdsa { try P384.Signing.ECDSASignature(rawRepresentation: signature) }, for: message)
        case (.p521(let key), .ecdsaDER): valid = key.isValidSignature(try ecdsa { try P521.Signing.ECDSASignature(derRepresentation: signature) }, for: message)
        case (.p521(let key), .ecdsaRaw): valid = key.isValidSignature(try ecdsa { try P521.Signing.ECDSASignature(rawRepresentation: signature) }, for: message)
        case (.ed25519(let key), .ed25519):
            guard signature.count == 64 else { throw KeyError.malformedSignature("an Ed25519 signature is 64 bytes") }
            valid = key.isValidSignature(Data(signature), for: Data(message))
        default:
            throw KeyError.wrongKeyType(expected: "a key for \(scheme)", found: type.rawValue)
        }
        guard valid else { throw KeyError.invalidSignature }
    }
}

extension RSAPrivateKey {
    /// RSA signature of `message` under `scheme` (an RSA-PSS scheme, salt = digest length, or
    /// `rsaPKCS1v15` with SHA-256), for any accepted key size including legacy 1024 bits.
    func signature(for message: some DataProtocol, scheme: SignatureScheme) throws(KeyError) -> Data {
        let data = Data(message)
        return try signing {
            switch scheme {
            case .rsaPSSSHA384: try backing.signature(for: SHA384.hash(data: data), padding: .PSS).rawRepresentation
            case .rsaPSSSHA512: try backing.signature(for: SHA512.hash(data: data), padding: .PSS).rawRepresentation
            case .rsaPKCS1v15: try backing.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation
            default: try backing.signature(for: SHA256.hash(data: data), padding: .PSS).rawRepresentation
            }
        }
    }
}

extension RSAPublicKey {
    /// PSS (any salt length, SecureRSA's verifier) or PKCS#1 v1.5 (swift-crypto) verification.
    func isValidSignature(_ signature: some DataProtocol, for message: some DataProtocol, scheme: SignatureScheme) throws(KeyError) -> Bool {
        guard signature.count == modulusByteCount else {
            throw KeyError.malformedSignature("an RSA-\(keySize.rawValue) signature is \(modulusByteCount) bytes")
        }
        let data = Data(message)
        switch scheme {
        case .rsaPKCS1v15:
            return backing.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5)
        case .rsaPSSSHA384:
            return PSSVerifier.isValid(signature: signature, messageHash: SHA384.hash(data: data), key: publicOperation,
                                       hash: SHA384.self, mgfHash: SHA384.self, saltLength: .any)
        case .rsaPSSSHA512:
            return PSSVerifier.isValid(signature: signature, messageHash: SHA512.hash(data: data), key: publicOperation,
                                       hash: SHA512.self, mgfHash: SHA512.self, saltLength: .any)
        default:
            return PSSVerifier.isValid(signature: signature, messageHash: SHA256.hash(data: data), key: publicOperation,
                                       hash: SHA256.self, mgfHash: SHA256.self, saltLength: .any)
        }
    }
}

private func resolve(_ scheme: SignatureScheme?, for type: KeyType) throws(KeyError) -> SignatureScheme {
    if let scheme { return scheme }
    guard let scheme = SignatureScheme.default(for: type) else {
        throw KeyError.wrongKeyType(expected: "a signing key", found: type.rawValue)
    }
    return scheme
}

private func ecdsa<S>(_ make: () throws -> S) throws(KeyError) -> S {
    do {
        return try make()
    } catch {
        throw KeyError.malformedSignature("not a well-formed ECDSA signature for this curve")
    }
}

/// Runs a swift-crypto signing operation, reporting its failure (which a valid key does not cause)
/// as `KeyError.invalidKey`.
private func signing<S>(_ sign: () throws -> S) throws(KeyError) -> S {
    do {
        return try sign()
    } catch {
        throw KeyError.invalidKey("swift-crypto could not sign with this key")
    }
}
