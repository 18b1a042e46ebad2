import Crypto
import Foundation
import SecureCore
import SecureRSA

extension Age {
    /// An `ssh-rsa` recipient: an OpenSSH RSA public key of at least 2048 bits. The file key is
    /// wrapped with RSAES-OAEP (SHA-256, MGF1-SHA-256) under the label
    /// `age-encryption.org/v1/ssh-rsa`, as age does. Not anonymous: the stanza carries a 4-byte key tag.
    public struct SSHRSARecipient: Recipient {
        static let stanzaType = "ssh-rsa"
        static let oaepLabel = Data("age-encryption.org/v1/ssh-rsa".utf8)
        /// age refuses keys whose modulus is shorter than 256 bytes (2048 bits).
        static let minimumModulusByteCount = 256
        /// The longest public exponent, in bits: x/crypto/ssh's (`parseRSA` refuses e over 24 bits),
        /// so age reads no ssh-rsa key with a longer one. It also keeps every file decryptable here:
        /// BoringSSL, which does the private operation, refuses e over 33 bits.
        static let maximumExponentBitCount = 24

        let key: RSAPublicOperation
        let wireFormat: Data

        /// The recipient for the RSA public key `(exponent, modulus)` whose SSH wire encoding is
        /// `wireFormat`. Throws `AgeError.invalidRecipient` for keys under 2048 bits, a public
        /// exponent over 24 bits, or a key the RSA arithmetic refuses.
        init(exponent: Data, modulus: Data, wireFormat: Data) throws(AgeError) {
            let key: RSAPublicOperation
            do {
                key = try RSAPublicOperation(modulus: modulus, exponent: exponent)
            } catch {
                throw .invalidRecipient("the ssh-rsa key is not usable: \(error.description)")
            }
            guard key.modulusByteCount >= Self.minimumModulusByteCount else {
                throw .invalidRecipient("the ssh-rsa key has \(key.modulusBitCount) bits; age needs at least 2048")
            }
            guard key.exponentBitCount <= Self.maximumExponentBitCount else {
                throw .invalidRecipient(
                    "the ssh-rsa key's public exponent has \(key.exponentBitCount) bits; age accepts at most \(Self.maximumExponentBitCount)")
            }
            self.key = key
            self.wireFormat = wireFormat
        }

        /// Parses an OpenSSH public key line (`ssh-rsa AAAA… [comment]`). Throws `AgeError.sshKey`
        /// when SecureCore's codec refuses the key, `invalidRecipient` for a key under 2048 bits, a
        /// public exponent over 24 bits, or a valid key of another type.
        public init(_ line: String) throws(AgeError) {
            guard let recipient = try SSHKeys.parseRecipient(line) as? SSHRSARecipient else {
                throw .invalidRecipient("not an ssh-rsa public key line")
            }
            self = recipient
        }

        /// Wraps `fileKey` with RSA-OAEP-SHA256 and age's label.
        public func wrap(fileKey: SecretBytes) throws(AgeError) -> [Stanza] {
            let body: Data
            do {
                body = try OAEP.encrypt(fileKey, label: Self.oaepLabel, key: key, hash: SHA256.self, mgfHash: SHA256.self)
            } catch {
                throw .invalidRecipient("the ssh-rsa key cannot wrap a file key: \(error.description)")
            }
            return [Stanza(arguments: [Self.stanzaType, SSHKeys.tag(wireFormat)], body: body)]
        }
    }

    /// An `ssh-rsa` identity from an unencrypted OpenSSH private key file. The private operation is
    /// BoringSSL's (blinded, constant time); the OAEP padding is checked in constant time with one
    /// outcome for every failure.
    public struct SSHRSAIdentity: Identity {
        private let key: RSAPrivateOperation
        private let wireFormat: Data
        /// The matching recipient.
        public let recipient: SSHRSARecipient

        init(key: RSAPrivateOperation, recipient: SSHRSARecipient) {
            self.key = key
            self.wireFormat = recipient.wireFormat
            self.recipient = recipient
        }

        /// Parses an unencrypted OpenSSH `ssh-rsa` private key file. Throws `AgeError.openSSHKeyFile`
        /// when SecureCore's reader refuses the file, `sshKey` when its public key is not valid,
        /// `invalidIdentity` for a key under 2048 bits, inconsistent numbers or another type.
        public init(openSSHPrivateKey text: String) throws(AgeError) {
            guard let identity = try SSHKeys.parseIdentity(text) as? SSHRSAIdentity else {
                throw .invalidIdentity("not an ssh-rsa private key")
            }
            self = identity
        }

        /// The 16-byte file key from the first ssh-rsa stanza carrying this identity's key tag; nil
        /// when there is none or it does not decrypt. Only that stanza is tried, as age's agessh
        /// does: each try is an RSA private operation, so a hostile header of 1,024 stanzas with the
        /// tag costs one, not 1,024. Every decryption failure is the same nil, as for a header
        /// without the tag (`noIdentityMatched` when no other identity opens the file).
        /// Throws `AgeError.malformedHeader` for an ssh-rsa stanza without exactly one argument
        /// before that stanza, or for a decrypted file key that is not 16 bytes.
        public func unwrap(stanzas: [Stanza]) throws(AgeError) -> SecretBytes? {
            let ownTag = SSHKeys.tag(wireFormat)
            for stanza in stanzas {
                guard try SSHKeys.isAddressed(stanza, type: SSHRSARecipient.stanzaType, to: ownTag, argumentCount: 2,
                                              malformed: "an ssh-rsa stanza must have exactly one argument, the key tag")
                else { continue }
                // age returns an error here; nil keeps the failure the same as for another key's
                // file, and lets the caller's other identities still try theirs.
                guard let fileKey = try? OAEP.decrypt(
                    stanza.body, label: SSHRSARecipient.oaepLabel, key: key, hash: SHA256.self, mgfHash: SHA256.self)
                else { return nil }
                guard fileKey.count == Age.fileKeyByteCount else {
                    throw AgeError.malformedHeader("an ssh-rsa stanza holds a file key of \(fileKey.count) bytes, not 16")
                }
                return fileKey
            }
            return nil
        }
    }
}
