import Crypto
import Foundation
import SecureCore

extension Age {
    /// An `ssh-ed25519` recipient: an OpenSSH Ed25519 public key, converted to its X25519 form, with
    /// the spec's tweak bound to the SSH key. Not anonymous: the stanza carries a 4-byte key tag.
    public struct SSHEd25519Recipient: Recipient {
        static let stanzaType = "ssh-ed25519"
        static let label = Data("age-encryption.org/v1/ssh-ed25519".utf8)

        private let montgomery: Curve25519.KeyAgreement.PublicKey
        private let wireFormat: Data

        /// The recipient for a 32-byte Ed25519 public key and its SSH wire encoding.
        init(publicKey: Data, wireFormat: Data) throws {
            guard let u = Edwards25519.montgomeryU(fromEdwardsY: publicKey),
                let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: u)
            else { throw AgeError.invalidRecipient("the ssh-ed25519 key is not a valid Ed25519 point") }
            self.montgomery = key
            self.wireFormat = wireFormat
        }

        /// Parses an OpenSSH public key line (`ssh-ed25519 AAAA… [comment]`).
        public init(_ line: String) throws {
            guard let recipient = try SSHKeys.parseRecipient(line) as? SSHEd25519Recipient else {
                throw AgeError.invalidRecipient("not an ssh-ed25519 public key line")
            }
            self = recipient
        }

        public func wrap(fileKey: SecretBytes) throws -> [Stanza] {
            let ephemeral = Curve25519.KeyAgreement.PrivateKey()
            let share = ephemeral.publicKey.rawRepresentation
            let shared = try SSHEd25519Identity.tweaked(
                ephemeral.sharedSecretFromKeyAgreement(with: montgomery), wireFormat: wireFormat)
            let wrapKey = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: shared, salt: share + montgomery.rawRepresentation, info: Self.label, outputByteCount: 32)
            return [Stanza(
                arguments: [Self.stanzaType, SSHKeys.tag(wireFormat), RawBase64.encode(share)],
                body: try FileKeyWrap.seal(fileKey, with: wrapKey))]
        }
    }

    /// An `ssh-ed25519` identity from an unencrypted OpenSSH private key file.
    public struct SSHEd25519Identity: Identity {
        private let scalar: Curve25519.KeyAgreement.PrivateKey
        private let wireFormat: Data
        /// The matching recipient.
        public let recipient: SSHEd25519Recipient

        /// The identity for an Ed25519 seed whose public key is `publicKey`, SSH wire-encoded as `wireFormat`.
        init(seed: SecretBytes, publicKey: Data, wireFormat: Data) throws {
            // The X25519 scalar of an Ed25519 key: the first half of SHA-512(seed) (X25519 clamps it).
            let digest = seed.withUnsafeBytes { SHA512.hash(data: $0) }
            scalar = try digest.withUnsafeBytes { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: $0.prefix(32)) }
            self.wireFormat = wireFormat
            recipient = try SSHEd25519Recipient(publicKey: publicKey, wireFormat: wireFormat)
        }

        /// Parses an unencrypted OpenSSH `ssh-ed25519` private key file.
        public init(openSSHPrivateKey text: String) throws {
            guard let identity = try SSHKeys.parseIdentity(text) as? SSHEd25519Identity else {
                throw AgeError.invalidIdentity("not an ssh-ed25519 private key")
            }
            self = identity
        }

        public func unwrap(stanzas: [Stanza]) throws -> SecretBytes? {
            let ownTag = SSHKeys.tag(wireFormat)
            for stanza in stanzas where stanza.type == SSHEd25519Recipient.stanzaType {
                guard stanza.arguments.count == 3 else {
                    throw AgeError.malformedHeader("an ssh-ed25519 stanza must have a tag and a share")
                }
                guard stanza.arguments[1] == ownTag else { continue }
                guard let share = RawBase64.decode(stanza.arguments[2]), share.count == 32 else {
                    throw AgeError.malformedHeader("an ssh-ed25519 share is not canonical base64 of 32 bytes")
                }
                guard stanza.body.count == FileKeyWrap.wrappedByteCount else {
                    throw AgeError.malformedHeader("an ssh-ed25519 stanza body is not 32 bytes")
                }
                let product: SharedSecret
                do {
                    product = try scalar.sharedSecretFromKeyAgreement(with: .init(rawRepresentation: share))
                } catch {
                    throw AgeError.malformedHeader("an ssh-ed25519 share is a low-order point")
                }
                let shared = try Self.tweaked(product, wireFormat: wireFormat)
                let wrapKey = HKDF<SHA256>.deriveKey(
                    inputKeyMaterial: shared, salt: share + scalar.publicKey.rawRepresentation,
                    info: SSHEd25519Recipient.label, outputByteCount: 32)
                if let fileKey = FileKeyWrap.open(stanza.body, with: wrapKey) { return fileKey }
            }
            return nil
        }

        /// X25519(tweak, shared), tweak = HKDF-SHA-256(ikm = "", salt = SSH key, info = label).
        static func tweaked(_ shared: SharedSecret, wireFormat: Data) throws -> SymmetricKey {
            guard !shared.withUnsafeBytes({ $0.allSatisfy { $0 == 0 } }) else {
                throw AgeError.malformedHeader("an ssh-ed25519 share is a low-order point")
            }
            let tweak = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: Data()), salt: wireFormat, info: SSHEd25519Recipient.label,
                outputByteCount: 32)
            let tweakKey = try tweak.withUnsafeBytes { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: $0) }
            let point = try shared.withUnsafeBytes { try Curve25519.KeyAgreement.PublicKey(rawRepresentation: $0) }
            let result = try tweakKey.sharedSecretFromKeyAgreement(with: point)
            return result.withUnsafeBytes { SymmetricKey(data: $0) }
        }
    }
}
