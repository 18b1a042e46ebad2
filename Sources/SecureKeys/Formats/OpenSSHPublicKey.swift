import Crypto
import Foundation
import SecureCore

/// OpenSSH public key lines (`authorized_keys` format) for `ssh-rsa`, `ssh-ed25519` and
/// `ecdsa-sha2-nistp256/384/521`: a thin layer over SecureCore's `SSHPublicKey` codec that converts
/// to and from `AsymmetricPublicKey`. As `ssh-keygen` does, a line whose first field differs from
/// the key type inside the blob is refused.
enum OpenSSHPublicKey {
    /// The SSH form of `key`; X25519 has none (`notApplicable`).
    static func sshKey(_ key: AsymmetricPublicKey, comment: String? = nil) throws(KeyError) -> SSHPublicKey {
        let fields: SSHPublicKey.Key
        switch key {
        case .rsa(let rsa):
            let components = rsa.components
            fields = .rsa(exponent: components.exponent.drop(while: { $0 == 0 }), modulus: components.modulus.drop(while: { $0 == 0 }))
        case .ed25519(let ed): fields = .ed25519(ed.rawRepresentation)
        case .p256(let ec): fields = .ecdsa(curve: .nistp256, point: ec.x963Representation)
        case .p384(let ec): fields = .ecdsa(curve: .nistp384, point: ec.x963Representation)
        case .p521(let ec): fields = .ecdsa(curve: .nistp521, point: ec.x963Representation)
        case .x25519:
            throw .notApplicable("OpenSSH has no X25519 public key format")
        }
        do {
            return try SSHPublicKey(fields, comment: comment)
        } catch {
            throw .sshKey(error)
        }
    }

    static func encode(_ key: AsymmetricPublicKey, comment: String? = nil) throws(KeyError) -> String {
        try sshKey(key, comment: comment).line
    }

    static func decode(_ line: String) throws(KeyError) -> AsymmetricPublicKey {
        let ssh: SSHPublicKey
        do {
            ssh = try SSHPublicKey(line: line)
        } catch {
            throw .sshKey(error)
        }
        guard ssh.label == ssh.keyType else { throw .malformedOpenSSH("key type in the blob differs from the line") }
        switch ssh.key {
        case .rsa(let exponent, let modulus): return .rsa(try RSAPublicKey(modulus: modulus, exponent: exponent))
        case .ed25519(let raw): return .ed25519(try ed25519PublicKey(raw))
        case .ecdsa(.nistp256, let point): return .p256(try curveKey { try P256.Signing.PublicKey(x963Representation: point) })
        case .ecdsa(.nistp384, let point): return .p384(try curveKey { try P384.Signing.PublicKey(x963Representation: point) })
        case .ecdsa(.nistp521, let point): return .p521(try curveKey { try P521.Signing.PublicKey(x963Representation: point) })
        }
    }
}

extension AsymmetricPublicKey {
    /// The fingerprint `ssh-keygen -l` prints: `SHA256:` and the unpadded base64 of SHA-256 of the
    /// key's SSH wire encoding (the `authorized_keys` blob). Nil for X25519, which OpenSSH has no
    /// encoding for.
    public var openSSHFingerprint: String? {
        guard let blob = try? OpenSSHPublicKey.sshKey(self).blob else { return nil }
        let digest = Base64.encode(Hashing.hash(blob, with: .sha256))
        return "SHA256:" + digest.replacingOccurrences(of: "=", with: "")
    }
}
