import Crypto
import Foundation
import SecureCore

extension Age {
    /// The native X25519 recipient: an `age1…` public key.
    public struct X25519Recipient: Recipient, Hashable, CustomStringConvertible {
        static let stanzaType = "X25519"
        static let wrapInfo = Data("age-encryption.org/v1/X25519".utf8)

        /// The 32-byte Curve25519 public key.
        public let publicKey: Curve25519.KeyAgreement.PublicKey

        /// The recipient for `publicKey`.
        public init(publicKey: Curve25519.KeyAgreement.PublicKey) { self.publicKey = publicKey }

        /// Parses an `age1…` Bech32 recipient; throws `AgeError.invalidRecipient` for anything else.
        public init(_ text: String) throws(AgeError) {
            guard let (hrp, data) = Bech32.decode(text), hrp == "age", data.count == 32,
                let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: data)
            else {
                // Never echo the input: a mistaken argument is often an identity, which is secret.
                if text.uppercased().hasPrefix("AGE-SECRET-KEY-") {
                    throw AgeError.invalidRecipient("this is an identity (a secret key), not a recipient; use its age1… public key")
                }
                throw AgeError.invalidRecipient("not an age1… X25519 recipient")
            }
            self.publicKey = key
        }

        /// The `age1…` Bech32 encoding.
        public var string: String { Bech32.encode(hrp: "age", data: publicKey.rawRepresentation) }

        /// The `age1…` encoding (public, safe to print).
        public var description: String { string }

        /// Wraps `fileKey` to this key with a fresh ephemeral share. Throws `AgeError.invalidRecipient`
        /// when the key agreement fails (a low-order public key).
        public func wrap(fileKey: SecretBytes) throws(AgeError) -> [Stanza] {
            let ephemeral = Curve25519.KeyAgreement.PrivateKey()
            let share = ephemeral.publicKey.rawRepresentation
            guard let shared = ephemeral.nonZeroSharedSecret(with: publicKey) else {
                throw .invalidRecipient("the X25519 key agreement failed (a low-order public key)")
            }
            let wrapKey = shared.hkdfDerivedSymmetricKey(
                using: SHA256.self, salt: share + publicKey.rawRepresentation, sharedInfo: Self.wrapInfo,
                outputByteCount: 32)
            let body = try FileKeyWrap.seal(fileKey, with: wrapKey)
            return [Stanza(arguments: [Self.stanzaType, RawBase64.encode(share)], body: body)]
        }

        /// Equal when the public keys are.
        public static func == (a: Self, b: Self) -> Bool { a.publicKey.rawRepresentation == b.publicKey.rawRepresentation }
        /// Hashes the public key.
        public func hash(into hasher: inout Hasher) { hasher.combine(publicKey.rawRepresentation) }
    }

    /// The native X25519 identity: an `AGE-SECRET-KEY-1…` private key.
    public struct X25519Identity: Identity {
        /// The Curve25519 private key.
        public let privateKey: Curve25519.KeyAgreement.PrivateKey

        /// A new random identity.
        public init() { privateKey = Curve25519.KeyAgreement.PrivateKey() }

        /// The identity for `privateKey`.
        public init(privateKey: Curve25519.KeyAgreement.PrivateKey) { self.privateKey = privateKey }

        /// Parses an `AGE-SECRET-KEY-1…` Bech32 identity; throws `AgeError.invalidIdentity` for
        /// anything else. The error never repeats the input, which may be secret.
        public init(_ text: String) throws(AgeError) {
            guard let (hrp, data) = Bech32.decode(text), hrp == "AGE-SECRET-KEY-", data.count == 32,
                let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: data)
            else { throw AgeError.invalidIdentity("not an AGE-SECRET-KEY-1… X25519 identity") }
            privateKey = key
        }

        /// The `AGE-SECRET-KEY-1…` encoding (uppercase, as age writes it). It is the secret key:
        /// write it only to a protected file, never to logs.
        public var secretString: String {
            Bech32.encode(hrp: "AGE-SECRET-KEY-", data: privateKey.rawRepresentation, uppercase: true)
        }

        /// The matching recipient.
        public var recipient: X25519Recipient { X25519Recipient(publicKey: privateKey.publicKey) }

        /// The file key from this identity's X25519 stanza; nil when none opens. Throws
        /// `AgeError.malformedHeader` for a malformed X25519 stanza.
        public func unwrap(stanzas: [Stanza]) throws(AgeError) -> SecretBytes? {
            for stanza in stanzas where stanza.type == X25519Recipient.stanzaType {
                guard stanza.arguments.count == 2 else {
                    throw AgeError.malformedHeader("an X25519 stanza must have exactly one argument after its type")
                }
                guard let share = RawBase64.decode(stanza.arguments[1]), share.count == 32 else {
                    throw AgeError.malformedHeader("an X25519 share is not canonical base64 of 32 bytes")
                }
                guard stanza.body.count == FileKeyWrap.wrappedByteCount else {
                    throw AgeError.malformedHeader("an X25519 stanza body is not 32 bytes")
                }
                guard let point = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: share),
                    let shared = privateKey.nonZeroSharedSecret(with: point)
                else { throw AgeError.malformedHeader("an X25519 share is a low-order point") }
                let wrapKey = shared.hkdfDerivedSymmetricKey(
                    using: SHA256.self, salt: share + privateKey.publicKey.rawRepresentation,
                    sharedInfo: X25519Recipient.wrapInfo, outputByteCount: 32)
                if let fileKey = FileKeyWrap.open(stanza.body, with: wrapKey) { return fileKey }
            }
            return nil
        }
    }
}

/// The stanza body shared by the native types: ChaCha20-Poly1305 of the file key under a wrap key,
/// with an all-zero nonce (safe because every wrap key is used once).
enum FileKeyWrap {
    static let wrappedByteCount = Age.fileKeyByteCount + 16

    static func seal(_ fileKey: SecretBytes, with key: SymmetricKey) throws(AgeError) -> Data {
        let box: ChaChaPoly.SealedBox
        do {
            box = try fileKey.withUnsafeBytes {
                try ChaChaPoly.seal($0, using: key, nonce: ChaChaPoly.Nonce(data: Data(count: 12)))
            }
        } catch {
            throw .invalidRecipient("ChaCha20-Poly1305 refused the wrap key")  // not reached: 32-byte key, 12-byte nonce
        }
        return box.ciphertext + box.tag
    }

    /// The file key, or nil when the body does not authenticate under `key`.
    static func open(_ body: Data, with key: SymmetricKey) -> SecretBytes? {
        guard body.count == wrappedByteCount,
            let box = try? ChaChaPoly.SealedBox(
                nonce: ChaChaPoly.Nonce(data: Data(count: 12)), ciphertext: body.prefix(16), tag: body.suffix(16)),
            var plain = try? ChaChaPoly.open(box, using: key)
        else { return nil }
        defer { plain.resetBytes(in: 0..<plain.count) }
        return SecretBytes(plain)
    }
}
