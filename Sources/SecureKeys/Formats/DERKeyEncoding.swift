import Crypto
import Foundation
import SecureCore
import SwiftASN1

// X.509 SubjectPublicKeyInfo, PKCS#8 and PKCS#1 DER for every key type, parsed and written with
// swift-asn1; swift-crypto validates the key values inside.

extension AsymmetricPublicKey {
    /// Reads an X.509 SubjectPublicKeyInfo DER. Throws `malformedDER`, `unsupportedAlgorithm`,
    /// `unsupportedKeySize` or `invalidKey`.
    public init(spkiDERRepresentation der: some DataProtocol) throws(KeyError) {
        let info = try DER.decode(SubjectPublicKeyInfo.self, from: der, what: "SubjectPublicKeyInfo")
        let key = info.key
        switch info.algorithm.algorithm {
        case OID.rsaEncryption:
            guard info.algorithm == .rsaEncryption || info.algorithm.parameters == nil else {
                throw KeyError.malformedDER("rsaEncryption parameters must be NULL")
            }
            self = .rsa(try RSAPublicKey(pkcs1DERRepresentation: key))
        case OID.ecPublicKey:
            switch try namedCurve(info.algorithm) {
            case OID.p256: self = .p256(try curveKey { try P256.Signing.PublicKey(x963Representation: key) })
            case OID.p384: self = .p384(try curveKey { try P384.Signing.PublicKey(x963Representation: key) })
            default: self = .p521(try curveKey { try P521.Signing.PublicKey(x963Representation: key) })
            }
        case OID.ed25519:
            try requireAbsentParameters(info.algorithm)
            self = .ed25519(try ed25519PublicKey(key))
        case OID.x25519:
            try requireAbsentParameters(info.algorithm)
            self = .x25519(try curveKey { try Curve25519.KeyAgreement.PublicKey(rawRepresentation: key) })
        default:
            throw KeyError.unsupportedAlgorithm("public key algorithm \(info.algorithm.algorithm)")
        }
    }

    /// The X.509 SubjectPublicKeyInfo DER encoding.
    public var spkiDERRepresentation: Data {
        let info: SubjectPublicKeyInfo
        switch self {
        case .rsa(let key): info = SubjectPublicKeyInfo(algorithm: .rsaEncryption, key: Array(key.pkcs1DERRepresentation))
        case .p256(let key): info = SubjectPublicKeyInfo(algorithm: .ec(OID.p256), key: Array(key.x963Representation))
        case .p384(let key): info = SubjectPublicKeyInfo(algorithm: .ec(OID.p384), key: Array(key.x963Representation))
        case .p521(let key): info = SubjectPublicKeyInfo(algorithm: .ec(OID.p521), key: Array(key.x963Representation))
        case .ed25519(let key): info = SubjectPublicKeyInfo(algorithm: .init(algorithm: OID.ed25519, parameters: nil), key: Array(key.rawRepresentation))
        case .x25519(let key): info = SubjectPublicKeyInfo(algorithm: .init(algorithm: OID.x25519, parameters: nil), key: Array(key.rawRepresentation))
        }
        return Data(DER.encoded(info))
    }
}

extension AsymmetricPrivateKey {
    /// Reads an unencrypted PKCS#8 `PrivateKeyInfo`/`OneAsymmetricKey` DER. Throws `malformedDER`,
    /// `unsupportedAlgorithm`, `unsupportedKeySize` or `invalidKey`.
    public init(pkcs8DERRepresentation der: some DataProtocol) throws(KeyError) {
        let info = try DER.decode(OneAsymmetricKey.self, from: der, what: "PKCS#8 private key")
        let inner = info.privateKey
        switch info.algorithm.algorithm {
        case OID.rsaEncryption:
            self = .rsa(try RSAPrivateKey(pkcs1DERRepresentation: inner))
        case OID.ecPublicKey:
            // swift-crypto reads the whole PKCS#8 structure once the curve is known.
            let bytes = Array(der)
            switch try namedCurve(info.algorithm) {
            case OID.p256: self = .p256(try curveKey { try P256.Signing.PrivateKey(derRepresentation: bytes) })
            case OID.p384: self = .p384(try curveKey { try P384.Signing.PrivateKey(derRepresentation: bytes) })
            default: self = .p521(try curveKey { try P521.Signing.PrivateKey(derRepresentation: bytes) })
            }
        case OID.ed25519:
            try requireAbsentParameters(info.algorithm)
            let seed = try DER.decode(ASN1OctetString.self, from: inner, what: "Ed25519 private key")
            self = .ed25519(try curveKey { try Curve25519.Signing.PrivateKey(rawRepresentation: seed.bytes) })
        case OID.x25519:
            try requireAbsentParameters(info.algorithm)
            let scalar = try DER.decode(ASN1OctetString.self, from: inner, what: "X25519 private key")
            self = .x25519(try curveKey { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: scalar.bytes) })
        default:
            throw KeyError.unsupportedAlgorithm("private key algorithm \(info.algorithm.algorithm)")
        }
    }

    /// The unencrypted PKCS#8 DER encoding (RFC 5208 version 0, as OpenSSL writes it). Secret.
    public var pkcs8DERRepresentation: SecretBytes {
        switch self {
        case .rsa(let key):
            let inner = key.pkcs1DERRepresentation.withUnsafeBytes { Array($0) }
            return SecretBytes(DER.encoded(OneAsymmetricKey(algorithm: .rsaEncryption, privateKey: inner)))
        case .p256(let key): return SecretBytes(key.derRepresentation)
        case .p384(let key): return SecretBytes(key.derRepresentation)
        case .p521(let key): return SecretBytes(key.derRepresentation)
        case .ed25519(let key): return Self.wrapCurve25519(key.rawRepresentation, oid: OID.ed25519)
        case .x25519(let key): return Self.wrapCurve25519(key.rawRepresentation, oid: OID.x25519)
        }
    }

    /// RFC 8410 §7: `privateKey` holds `CurvePrivateKey ::= OCTET STRING` with the 32-byte seed/scalar.
    private static func wrapCurve25519(_ raw: Data, oid: ASN1ObjectIdentifier) -> SecretBytes {
        let inner = DER.encoded(ASN1OctetString(contentBytes: ArraySlice(raw)))
        return SecretBytes(DER.encoded(OneAsymmetricKey(algorithm: .init(algorithm: oid, parameters: nil), privateKey: inner)))
    }
}

extension AlgorithmIdentifier {
    static func ec(_ curve: ASN1ObjectIdentifier) -> AlgorithmIdentifier {
        AlgorithmIdentifier(algorithm: OID.ecPublicKey, parameters: try! ASN1Any(erasing: curve))
    }
}

/// The named curve of an id-ecPublicKey identifier (RFC 5480), one of P-256/384/521.
private func namedCurve(_ algorithm: AlgorithmIdentifier) throws(KeyError) -> ASN1ObjectIdentifier {
    guard let parameters = algorithm.parameters, let curve = try? ASN1ObjectIdentifier(asn1Any: parameters) else {
        throw KeyError.malformedDER("EC key without a named curve")
    }
    guard [OID.p256, OID.p384, OID.p521].contains(curve) else { throw KeyError.unsupportedAlgorithm("elliptic curve \(curve)") }
    return curve
}

/// RFC 8410 §3: the Curve25519 identifiers have absent parameters.
private func requireAbsentParameters(_ algorithm: AlgorithmIdentifier) throws(KeyError) {
    guard algorithm.parameters == nil else { throw KeyError.malformedDER("\(algorithm.algorithm) parameters must be absent") }
}

/// Runs a swift-crypto key constructor, turning its rejection into `KeyError.invalidKey`.
func curveKey<K>(_ make: () throws -> K) throws(KeyError) -> K {
    do {
        return try make()
    } catch {
        // swift-crypto's error says only "underlyingCoreCryptoError(error: N)"; say what is wrong instead.
        throw KeyError.invalidKey("the key bytes are not a valid point or scalar for this curve (a point off the curve, or a scalar of zero or not below the group order)")
    }
}

/// An Ed25519 public key from its 32 bytes, which must be an RFC 8032 §5.1.3 point encoding on
/// every import path, as on OpenSSH's (swift-crypto checks the length only: a y not below p, a y
/// of no point, or x = 0 with the sign bit set were stored and fingerprinted, then failed later).
func ed25519PublicKey(_ raw: some DataProtocol) throws(KeyError) -> Curve25519.Signing.PublicKey {
    let bytes = Data(raw)
    switch Edwards25519.defect(ofPoint: bytes) {
    case nil, .wrongLength?: break  // the length is swift-crypto's to refuse
    case .nonCanonicalY?: throw KeyError.invalidKey("not an Ed25519 point: y is not below p (a non-canonical encoding)")
    case .notOnCurve?: throw KeyError.invalidKey("not an Ed25519 point: no point on the curve has this y")
    case .signedZeroX?: throw KeyError.invalidKey("not an Ed25519 point: x is 0 but its sign bit is set")
    }
    return try curveKey { try Curve25519.Signing.PublicKey(rawRepresentation: bytes) }
}
