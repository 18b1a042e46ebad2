import Crypto
import Foundation
import SecureCore
import CryptoExtras

extension KeyImport {
    /// An unencrypted OpenSSH private key file (`ssh-keygen` output) of type `ssh-ed25519`,
    /// `ssh-rsa` or `ecdsa-sha2-nistp256/384/521`, read with SecureCore's `OpenSSHPrivateKeyFile`
    /// (the reader AgeEncryption uses). The key must match the file's public key blob.
    static func openSSHPrivateKey(_ text: String) throws -> AsymmetricPrivateKey {
        do {
            let file = try OpenSSHPrivateKeyFile(text)
            let key: AsymmetricPrivateKey
            switch file.keyType {
            case "ssh-ed25519":
                let seed = try file.ed25519Seed()
                key = .ed25519(try curveKey { try seed.withUnsafeBytes { try Curve25519.Signing.PrivateKey(rawRepresentation: $0) } })
            case "ssh-rsa":
                key = .rsa(try file.withPrivateFields { fields in
                    let n = try fields.unsignedMPInt(), e = try fields.unsignedMPInt(), d = try fields.unsignedMPInt()
                    _ = try fields.unsignedMPInt()  // iqmp: recomputed by swift-crypto from p and q
                    let p = try fields.unsignedMPInt(), q = try fields.unsignedMPInt()
                    guard RSAKeySize(rawValue: n.count * 8) != nil else { throw KeyError.unsupportedKeySize(n.count * 8) }
                    do {
                        return try RSAPrivateKey(backing: _RSA.Signing.PrivateKey(n: n, e: e, d: d, p: p, q: q))
                    } catch let error as KeyError {
                        throw error
                    } catch {
                        throw KeyError.invalidKey("the OpenSSH RSA numbers do not form a key")
                    }
                })
            case "ecdsa-sha2-nistp256": key = .p256(try ecdsaScalar(file, "nistp256", 32) { try P256.Signing.PrivateKey(rawRepresentation: $0) })
            case "ecdsa-sha2-nistp384": key = .p384(try ecdsaScalar(file, "nistp384", 48) { try P384.Signing.PrivateKey(rawRepresentation: $0) })
            case "ecdsa-sha2-nistp521": key = .p521(try ecdsaScalar(file, "nistp521", 66) { try P521.Signing.PrivateKey(rawRepresentation: $0) })
            default: throw KeyError.unsupportedAlgorithm("OpenSSH key type \(file.keyType)")
            }
            guard try OpenSSHPublicKey.sshKey(key.publicKey).blob == file.publicKeyBlob else {
                throw KeyError.invalidKey("the OpenSSH private key does not match the file's public key")
            }
            return key
        } catch let error as OpenSSHKeyFileError {
            throw error == .passphraseProtected ? KeyError.unsupportedAlgorithm(error.description) : KeyError.malformedOpenSSH(error.description)
        }
    }

    private static func ecdsaScalar<K>(
        _ file: OpenSSHPrivateKeyFile, _ curve: String, _ size: Int, _ make: (Data) throws -> K
    ) throws -> K {
        try file.withPrivateFields { fields in
            guard try fields.string() == Data(curve.utf8) else { throw KeyError.malformedOpenSSH("curve name differs from the key type") }
            _ = try fields.string()  // the public point, checked against the public key blob by the caller
            let scalar = try fields.unsignedMPInt()
            guard scalar.count <= size else { throw KeyError.invalidKey("EC scalar too long for \(curve)") }
            let padded = Data(repeating: 0, count: size - scalar.count) + scalar
            return try curveKey { try make(padded) }
        }
    }
}
