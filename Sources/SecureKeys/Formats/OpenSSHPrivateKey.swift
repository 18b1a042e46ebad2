import Crypto
import Foundation
import SecureCore
import CryptoExtras

extension KeyImport {
    /// An unencrypted OpenSSH private key file (`ssh-keygen` output) of type `ssh-ed25519`,
    /// `ssh-rsa` or `ecdsa-sha2-nistp256/384/521`, read with SecureCore's `OpenSSHPrivateKeyFile`
    /// (the reader AgeEncryption uses). The key must match the file's public key blob.
    static func openSSHPrivateKey(_ text: String) throws(KeyError) -> AsymmetricPrivateKey {
        let file: OpenSSHPrivateKeyFile
        do {
            file = try OpenSSHPrivateKeyFile(text)
        } catch {
            throw .openSSHKeyFile(error)
        }
        let key: AsymmetricPrivateKey
        switch file.keyType {
        case "ssh-ed25519":
            let seed: SecretBytes
            do {
                seed = try file.ed25519Seed()
            } catch {
                throw .openSSHKeyFile(error)
            }
            key = .ed25519(try curveKey { try seed.withUnsafeBytes { try Curve25519.Signing.PrivateKey(rawRepresentation: $0) } })
        case "ssh-rsa":
            key = .rsa(try file.withPrivateFields { fields throws(KeyError) in
                let (n, e, d, p, q): (Data, Data, Data, Data, Data)
                do throws(OpenSSHKeyFileError) {
                    n = try fields.unsignedMPInt()
                    e = try fields.unsignedMPInt()
                    d = try fields.unsignedMPInt()
                    _ = try fields.unsignedMPInt()  // iqmp: recomputed by swift-crypto from p and q
                    p = try fields.unsignedMPInt()
                    q = try fields.unsignedMPInt()
                } catch {
                    throw .openSSHKeyFile(error)
                }
                guard RSAKeySize(rawValue: n.count * 8) != nil else { throw .unsupportedKeySize(n.count * 8) }
                let backing: _RSA.Signing.PrivateKey
                do {
                    backing = try _RSA.Signing.PrivateKey(n: n, e: e, d: d, p: p, q: q)
                } catch {
                    throw .invalidKey("the OpenSSH RSA numbers do not form a key")
                }
                return try RSAPrivateKey(backing: backing)
            })
        case "ecdsa-sha2-nistp256": key = .p256(try ecdsaScalar(file, "nistp256", 32) { try P256.Signing.PrivateKey(rawRepresentation: $0) })
        case "ecdsa-sha2-nistp384": key = .p384(try ecdsaScalar(file, "nistp384", 48) { try P384.Signing.PrivateKey(rawRepresentation: $0) })
        case "ecdsa-sha2-nistp521": key = .p521(try ecdsaScalar(file, "nistp521", 66) { try P521.Signing.PrivateKey(rawRepresentation: $0) })
        default: throw .unsupportedAlgorithm("OpenSSH key type \(KeyError.quoted(file.keyType))")
        }
        guard try OpenSSHPublicKey.sshKey(key.publicKey).blob == file.publicKeyBlob else {
            throw .invalidKey("the OpenSSH private key does not match the file's public key")
        }
        return key
    }

    private static func ecdsaScalar<K>(
        _ file: OpenSSHPrivateKeyFile, _ curve: String, _ size: Int, _ make: (Data) throws -> K
    ) throws(KeyError) -> K {
        try file.withPrivateFields { fields throws(KeyError) in
            let name: Data, scalar: Data
            do throws(OpenSSHKeyFileError) {
                name = try fields.string()
                _ = try fields.string()  // the public point, checked against the public key blob by the caller
                scalar = try fields.unsignedMPInt()
            } catch {
                throw .openSSHKeyFile(error)
            }
            guard name == Data(curve.utf8) else { throw .malformedOpenSSH("curve name differs from the key type") }
            guard scalar.count <= size else { throw .invalidKey("EC scalar too long for \(curve)") }
            let padded = Data(repeating: 0, count: size - scalar.count) + scalar
            return try curveKey { try make(padded) }
        }
    }
}
