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
            let sec1 = try DER.decode(ECPrivateKeyStructure.self, from: inner, what: "EC private key")
            self = try Self.ecPrivateKey(sec1, curve: try namedCurve(info.algorithm), publicKey: info.publicKey)
        case OID.ed25519:
            try requireAbsentParameters(info.algorithm)
            let seed = try DER.decode(ASN1OctetString.self, from: inner, what: "Ed25519 private key")
            let key = try curveKey { try Curve25519.Signing.PrivateKey(rawRepresentation: seed.bytes) }
            try requireOwn([info.publicKey], key.publicKey.rawRepresentation)
            self = .ed25519(key)
        case OID.x25519:
            try requireAbsentParameters(info.algorithm)
            let scalar = try DER.decode(ASN1OctetString.self, from: inner, what: "X25519 private key")
            let key = try curveKey { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: scalar.bytes) }
            try requireOwn([info.publicKey], key.publicKey.rawRepresentation)
            self = .x25519(key)
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

extension AsymmetricPrivateKey {
    /// The EC private key of SEC1 `ECPrivateKey` fields (RFC 5915). The curve is `curve` (a PKCS#8
    /// algorithm's), which SEC1's own `[0]` must then agree with, else SEC1's own, else the one
    /// whose scalar has this length; a public key stored beside the scalar (SEC1's `[1]`, or
    /// PKCS#8's `publicKey`) must be the scalar's own, as `openssl pkey -check` requires: otherwise
    /// the key would be reported by a fingerprint that is not the one of the key it signs with.
    static func ecPrivateKey(
        _ sec1: ECPrivateKeyStructure, curve outer: ASN1ObjectIdentifier?, publicKey: [UInt8]? = nil
    ) throws(KeyError) -> AsymmetricPrivateKey {
        if let outer, let inner = sec1.curve, inner != outer {
            throw KeyError.malformedDER("the EC private key names the curve \(inner) inside a \(outer) key")
        }
        let sizes: [ASN1ObjectIdentifier: Int] = [OID.p256: 32, OID.p384: 48, OID.p521: 66]
        guard let curve = outer ?? sec1.curve ?? sizes.first(where: { $0.value == sec1.privateKey.count })?.key else {
            throw KeyError.malformedDER("not a P-256, P-384 or P-521 SEC1 EC private key")
        }
        guard let size = sizes[curve] else { throw KeyError.unsupportedAlgorithm("elliptic curve \(curve)") }
        guard sec1.privateKey.count == size else {
            throw KeyError.malformedDER("a private key on curve \(curve) is \(size) bytes, not \(sec1.privateKey.count)")
        }
        let scalar = sec1.privateKey, stored = [sec1.publicKey, publicKey]
        switch curve {
        case OID.p256:
            let key = try curveKey { try P256.Signing.PrivateKey(rawRepresentation: scalar) }
            try requireOwn(stored, key.publicKey.x963Representation, key.publicKey.compressedRepresentation)
            return .p256(key)
        case OID.p384:
            let key = try curveKey { try P384.Signing.PrivateKey(rawRepresentation: scalar) }
            try requireOwn(stored, key.publicKey.x963Representation, key.publicKey.compressedRepresentation)
            return .p384(key)
        default:
            let key = try curveKey { try P521.Signing.PrivateKey(rawRepresentation: scalar) }
            try requireOwn(stored, key.publicKey.x963Representation, key.publicKey.compressedRepresentation)
            return .p521(key)
        }
    }
}

/// Throws `invalidKey` unless each public key in `stored` (kept beside a private key in its file),
/// when present, is the private key's in one of its encodings `own` (an EC point uncompressed or
/// compressed, as `openssl ec -conv_form compressed` writes it).
private func requireOwn(_ stored: [[UInt8]?], _ own: Data...) throws(KeyError) {
    for case let given? in stored where !own.contains(where: { [UInt8]($0) == given }) {
        throw KeyError.invalidKey("the public key stored with the private key is not its own")
    }
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
/// of no point, or x = 0 with the sign bit set were stored and fingerprinted, then failed later),
/// and not one of the eight points of small order (for which BoringSSL's verification accepts one
/// signature for every message).
func ed25519PublicKey(_ raw: some DataProtocol) throws(KeyError) -> Curve25519.Signing.PublicKey {
    let bytes = Data(raw)
    switch Edwards25519.defect(ofPoint: bytes) {
    case nil, .wrongLength?: break  // the length is swift-crypto's to refuse
    case .nonCanonicalY?: throw KeyError.invalidKey("not an Ed25519 point: y is not below p (a non-canonical encoding)")
    case .notOnCurve?: throw KeyError.invalidKey("not an Ed25519 point: no point on the curve has this y")
    case .signedZeroX?: throw KeyError.invalidKey("not an Ed25519 point: x is 0 but its sign bit is set")
    case .smallOrder?: throw KeyError.invalidKey("an Ed25519 point of small order: no one holds its secret, and one signature would verify every message")
    }
    return try curveKey { try Curve25519.Signing.PublicKey(rawRepresentation: bytes) }
}
