import Crypto
import Foundation
import SecureCore
import SecureRSA

/// OpenSSH key encodings: public key lines (`ssh-ed25519 AAAA… comment`) and unencrypted
/// `openssh-key-v1` private key files (PROTOCOL.key in OpenSSH).
enum SSHKeys {
    /// A recipient from an OpenSSH public key line, read by SecureCore's `SSHPublicKey` codec. As in
    /// age (Go's `x/crypto/ssh` `ParseAuthorizedKey`), the key type is the one inside the blob: the
    /// line's first field is ignored, so `ssh-rsa <ssh-ed25519 blob>` is an ssh-ed25519 recipient.
    /// `ssh-ed25519` and `ssh-rsa` keys are recipients; a well-formed key of another type whose line
    /// names that same type is `unsupportedKeyType` (age skips such lines in recipients files too);
    /// anything else is `sshKey` with the codec's error.
    static func parseRecipient(_ line: String) throws(AgeError) -> any Age.Recipient {
        let key: SSHPublicKey
        do {
            key = try SSHPublicKey(line: line)
        } catch .unsupportedKeyType(let type) {
            // age 1.1.1 skips a recipients-file line only when its first field names the blob's type.
            let label = line.trimmingCharacters(in: .whitespaces).prefix(while: { $0 != " " && $0 != "\t" })
            throw label == type
                ? .unsupportedKeyType(SSHPublicKeyError.unsupportedKeyType(type).description) : .sshKey(.unsupportedKeyType(type))
        } catch {
            throw .sshKey(error)
        }
        switch key.key {
        case .ed25519(let publicKey):
            return try Age.SSHEd25519Recipient(publicKey: publicKey, wireFormat: key.blob)
        case .rsa(let exponent, let modulus):
            return try Age.SSHRSARecipient(exponent: exponent, modulus: modulus, wireFormat: key.blob)
        case .ecdsa:
            let unsupported = SSHPublicKeyError.unsupportedKeyType(key.keyType)
            throw key.label == key.keyType ? .unsupportedKeyType(unsupported.description) : .sshKey(unsupported)
        }
    }

    /// An identity from an unencrypted OpenSSH private key file, read by SecureCore's
    /// `OpenSSHPrivateKeyFile` (the reader `sf key` uses too): ssh-ed25519 and ssh-rsa. The private
    /// key must be the one of the file's public key (`invalidIdentity` otherwise).
    static func parseIdentity(_ text: String) throws(AgeError) -> any Age.Identity {
        let file: OpenSSHPrivateKeyFile
        do {
            file = try OpenSSHPrivateKeyFile(text)
        } catch {
            throw .openSSHKeyFile(error)
        }
        switch file.keyType {
        case "ssh-ed25519":
            let seed: SecretBytes, key: SSHPublicKey
            do {
                seed = try file.ed25519Seed()  // checks that the blob holds this key's public key
            } catch {
                throw .openSSHKeyFile(error)
            }
            do {
                key = try SSHPublicKey(blob: file.publicKeyBlob)
            } catch {
                throw .sshKey(error)
            }
            guard case .ed25519(let publicKey) = key.key else {
                throw .invalidIdentity("the ssh-ed25519 private key file holds another type of public key")
            }
            // SecureCore compares the file's copies of the public key with each other only. A seed
            // of another key would answer to this key's tag without opening its files (SecureKeys'
            // reader refuses it too).
            let derived = seed.withUnsafeBytes { try? Curve25519.Signing.PrivateKey(rawRepresentation: $0).publicKey.rawRepresentation }
            guard derived == publicKey else {
                throw .invalidIdentity("the ssh-ed25519 private key does not match the file's public key")
            }
            return try Age.SSHEd25519Identity(seed: seed, publicKey: publicKey, wireFormat: file.publicKeyBlob)
        case "ssh-rsa":
            return try rsaIdentity(file)
        default:
            // Skippable like an unsupported recipient line, when other identities remain.
            throw .unsupportedKeyType("\(file.keyType) identities are not supported (ssh-ed25519 and ssh-rsa are)")
        }
    }

    /// An ssh-rsa identity: the private section holds n, e, d, iqmp, p and q as mpints (PROTOCOL.key);
    /// n and e must equal the file's public key, and BoringSSL checks that the numbers form a key.
    private static func rsaIdentity(_ file: OpenSSHPrivateKeyFile) throws(AgeError) -> any Age.Identity {
        let key: SSHPublicKey
        do {
            key = try SSHPublicKey(blob: file.publicKeyBlob)
        } catch {
            throw .sshKey(error)
        }
        guard case .rsa(let exponent, let modulus) = key.key else {
            throw .invalidIdentity("the ssh-rsa private key file holds another type of public key")
        }
        // The key tag is over the key's minimal encoding, as for a recipient from the `.pub` line
        // and as age's pk.Marshal(): the file's own blob may spell an integer with leading zeros.
        let recipient = try Age.SSHRSARecipient(exponent: exponent, modulus: modulus, wireFormat: key.blob)
        let numbers: (n: Data, e: Data, d: Data, p: Data, q: Data)
        do {
            numbers = try file.withPrivateFields { fields throws(OpenSSHKeyFileError) in
                let n = try fields.unsignedMPInt(), e = try fields.unsignedMPInt(), d = try fields.unsignedMPInt()
                _ = try fields.unsignedMPInt()  // iqmp: BoringSSL derives the CRT values itself
                return (n, e, d, try fields.unsignedMPInt(), try fields.unsignedMPInt())
            }
        } catch {
            throw .openSSHKeyFile(error)
        }
        guard numbers.n == modulus, numbers.e == exponent else {
            throw .invalidIdentity("the ssh-rsa private key does not match the file's public key")
        }
        let operation: RSAPrivateOperation
        do {
            operation = try RSAPrivateOperation(n: numbers.n, e: numbers.e, d: numbers.d, p: numbers.p, q: numbers.q)
        } catch {
            throw .invalidIdentity("the ssh-rsa private key's numbers do not form an RSA key of at least 2048 bits")
        }
        return Age.SSHRSAIdentity(key: operation, recipient: recipient)
    }

    /// Whether `stanza` is of `type` and addressed to the SSH key tagged `ownTag` (its second
    /// argument). Throws `AgeError.malformedHeader(malformed)` for a stanza of that type without
    /// exactly `argumentCount` arguments, addressed to this key or not (as age does, in order).
    static func isAddressed(
        _ stanza: Age.Stanza, type: String, to ownTag: String, argumentCount: Int, malformed: String
    ) throws(AgeError) -> Bool {
        guard stanza.type == type else { return false }
        guard stanza.arguments.count == argumentCount else { throw AgeError.malformedHeader(malformed) }
        return stanza.arguments[1] == ownTag
    }

    /// The 4-byte stanza tag: SHA-256 of the public key's wire format, truncated.
    static func tag(_ wireFormat: Data) -> String { RawBase64.encode(Data(SHA256.hash(data: wireFormat)).prefix(4)) }
}
