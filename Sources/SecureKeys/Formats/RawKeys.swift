import Crypto
import Foundation
import SecureCore

extension KeyImport {
    /// A private key from its raw bytes: the big-endian scalar for P-256/384/521 (32/48/66 bytes), the
    /// 32-byte seed for Ed25519 or scalar for X25519. Throws `notApplicable` for RSA, `invalidKey`
    /// for a wrong length or an out-of-range scalar.
    public static func rawPrivateKey(_ bytes: SecretBytes, type: KeyType) throws(KeyError) -> AsymmetricPrivateKey {
        try bytes.withUnsafeBytes { raw throws(KeyError) in
            switch type {
            case .p256: .p256(try curveKey { try P256.Signing.PrivateKey(rawRepresentation: raw) })
            case .p384: .p384(try curveKey { try P384.Signing.PrivateKey(rawRepresentation: raw) })
            case .p521: .p521(try curveKey { try P521.Signing.PrivateKey(rawRepresentation: raw) })
            case .ed25519: .ed25519(try curveKey { try Curve25519.Signing.PrivateKey(rawRepresentation: raw) })
            case .x25519: .x25519(try curveKey { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: raw) })
            case .rsa1024, .rsa2048, .rsa3072, .rsa4096: throw KeyError.notApplicable("RSA keys have no raw form")
            }
        }
    }

    /// A public key from its raw bytes: an X9.63 point, uncompressed or compressed, for P-256/384/521,
    /// or the 32-byte key for Ed25519/X25519. Throws `notApplicable` for RSA, `invalidKey` otherwise.
    public static func rawPublicKey(_ bytes: some DataProtocol, type: KeyType) throws(KeyError) -> AsymmetricPublicKey {
        let raw = Data(bytes)
        let compressed = raw.first == 0x02 || raw.first == 0x03
        switch type {
        case .p256:
            return .p256(try curveKey { compressed ? try P256.Signing.PublicKey(compressedRepresentation: raw) : try P256.Signing.PublicKey(x963Representation: raw) })
        case .p384:
            return .p384(try curveKey { compressed ? try P384.Signing.PublicKey(compressedRepresentation: raw) : try P384.Signing.PublicKey(x963Representation: raw) })
        case .p521:
            return .p521(try curveKey { compressed ? try P521.Signing.PublicKey(compressedRepresentation: raw) : try P521.Signing.PublicKey(x963Representation: raw) })
        case .ed25519: return .ed25519(try ed25519PublicKey(raw))
        case .x25519: return .x25519(try curveKey { try Curve25519.KeyAgreement.PublicKey(rawRepresentation: raw) })
        case .rsa1024, .rsa2048, .rsa3072, .rsa4096: throw KeyError.notApplicable("RSA keys have no raw form; use modulus and exponent")
        }
    }
}
