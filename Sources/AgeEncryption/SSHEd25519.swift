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
        init(publicKey: Data, wireFormat: Data) throws(AgeError) {
            guard let u = Edwards25519.montgomeryU(fromEdwardsY: publicKey),
                let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: u)
            else { throw AgeError.invalidRecipient("the ssh-ed25519 key is not a valid Ed25519 point, or is of small order") }
            self.montgomery = key
            self.wireFormat = wireFormat
        }

        /// Parses an OpenSSH public key line (`ssh-ed25519 AAAA… [comment]`). Throws
        /// `AgeError.sshKey` when SecureCore's codec refuses the key, `unsupportedKeyType` or
        /// `invalidRecipient` for a valid key of another type.
        public init(_ line: String) throws(AgeError) {
            guard let recipient = try SSHKeys.parseRecipient(line) as? SSHEd25519Recipient else {
                throw .invalidRecipient("not an ssh-ed25519 public key line")
            }
            self = recipient
        }

        /// Wraps `fileKey` to this key with a fresh ephemeral share. Throws `AgeError.invalidRecipient`
        /// when the key agreement fails.
        public func wrap(fileKey: SecretBytes) throws(AgeError) -> [Stanza] {
            let ephemeral = Curve25519.KeyAgreement.PrivateKey()
            let share = ephemeral.publicKey.rawRepresentation
            guard let product = ephemeral.nonZeroSharedSecret(with: montgomery) else {
                throw .invalidRecipient("the ssh-ed25519 key agreement failed (a low-order public key)")
            }
            let shared = try SSHEd25519Identity.tweaked(product, wireFormat: wireFormat)
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
        init(seed: SecretBytes, publicKey: Data, wireFormat: Data) throws(AgeError) {
            // The X25519 scalar of an Ed25519 key: the first half of SHA-512(seed) (X25519 clamps it).
            let digest = seed.withUnsafeBytes { SHA512.hash(data: $0) }
            // Any 32 bytes are an X25519 scalar: swift-crypto refuses only other lengths.
            guard let scalar = digest.withUnsafeBytes({ try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: $0.prefix(32)) }) else {
                throw .invalidIdentity("the ssh-ed25519 seed does not give an X25519 scalar")
            }
            self.scalar = scalar
            self.wireFormat = wireFormat
            recipient = try SSHEd25519Recipient(publicKey: publicKey, wireFormat: wireFormat)
        }

        /// Parses an unencrypted OpenSSH `ssh-ed25519` private key file. Throws
        /// `AgeError.openSSHKeyFile` when SecureCore's reader refuses the file, `sshKey` when its
        /// public key is not a valid key, `unsupportedKeyType` or `invalidIdentity` for another type.
        public init(openSSHPrivateKey text: String) throws(AgeError) {
            guard let identity = try SSHKeys.parseIdentity(text) as? SSHEd25519Identity else {
                throw .invalidIdentity("not an ssh-ed25519 private key")
            }
            self = identity
        }

        /// The file key from this identity's ssh-ed25519 stanza (matched by key tag); nil when none
        /// opens. Throws `AgeError.malformedHeader` for a malformed stanza (addressed to any key) or
        /// a low-order share.
        public func unwrap(stanzas: [Stanza]) throws(AgeError) -> SecretBytes? {
            let ownTag = SSHKeys.tag(wireFormat)
            for stanza in stanzas where stanza.type == SSHEd25519Recipient.stanzaType {
                let addressed = try SSHKeys.isAddressed(
                    stanza, type: SSHEd25519Recipient.stanzaType, to: ownTag, argumentCount: 3,
                    malformed: "an ssh-ed25519 stanza must have a tag and a share")
                // As age does (agessh's Ed25519Identity.unwrap), the share of every ssh-ed25519
                // stanza is checked, addressed to this key or not, so that a header age refuses
                // is refused here too.
                guard let share = RawBase64.decode(stanza.arguments[2]), share.count == 32 else {
                    throw AgeError.malformedHeader("an ssh-ed25519 share is not canonical base64 of 32 bytes")
                }
                guard addressed else { continue }
                guard stanza.body.count == FileKeyWrap.wrappedByteCount else {
                    throw AgeError.malformedHeader("an ssh-ed25519 stanza body is not 32 bytes")
                }
                guard let point = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: share),
                    let product = scalar.nonZeroSharedSecret(with: point)
                else { throw AgeError.malformedHeader("an ssh-ed25519 share is a low-order point") }
                let shared = try Self.tweaked(product, wireFormat: wireFormat)
                let wrapKey = HKDF<SHA256>.deriveKey(
                    inputKeyMaterial: shared, salt: share + scalar.publicKey.rawRepresentation,
                    info: SSHEd25519Recipient.label, outputByteCount: 32)
                if let fileKey = FileKeyWrap.open(stanza.body, with: wrapKey) { return fileKey }
            }
            return nil
        }

        /// X25519(tweak, shared), tweak = HKDF-SHA-256(ikm = "", salt = SSH key, info = label).
        static func tweaked(_ shared: SharedSecret, wireFormat: Data) throws(AgeError) -> SymmetricKey {
            let tweak = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: Data()), salt: wireFormat, info: SSHEd25519Recipient.label,
                outputByteCount: 32)
            do {
                let tweakKey = try tweak.withUnsafeBytes { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: $0) }
                let point = try shared.withUnsafeBytes { try Curve25519.KeyAgreement.PublicKey(rawRepresentation: $0) }
                guard let result = tweakKey.nonZeroSharedSecret(with: point) else {
                    throw AgeError.malformedHeader("an ssh-ed25519 share is a low-order point")
                }
                return result.withUnsafeBytes { SymmetricKey(data: $0) }
            } catch {
                throw .malformedHeader("an ssh-ed25519 share is a low-order point")
            }
        }
    }
}
