import Crypto
import Foundation
import SecureCore

extension Age {
    /// The native hybrid post-quantum recipient (`age1pq1…`): HPKE with the MLKEM768-X25519 (X-Wing)
    /// KEM, HKDF-SHA-256 and ChaCha20-Poly1305.
    @available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *)
    public struct HybridRecipient: Recipient, CustomStringConvertible {
        static let stanzaType = "mlkem768x25519"
        static let info = Data("age-encryption.org/mlkem768x25519".utf8)
        static let encapsulatedKeyByteCount = 1120
        static let ciphersuite = HPKE.Ciphersuite(kem: .XWingMLKEM768X25519, kdf: .HKDF_SHA256, aead: .chaChaPoly)

        /// The X-Wing public key.
        public let publicKey: XWingMLKEM768X25519.PublicKey

        /// The recipient for `publicKey`.
        public init(publicKey: XWingMLKEM768X25519.PublicKey) { self.publicKey = publicKey }

        /// `postquantum`: the file is refused when a classical recipient is added to it.
        public var labels: Set<String> { [Age.postQuantumLabel] }

        /// Parses an `age1pq1…` recipient; throws `AgeError.invalidRecipient` for anything else.
        public init(_ text: String) throws(AgeError) {
            guard let (hrp, data) = Bech32.decode(text), hrp == "age1pq",
                let key = try? XWingMLKEM768X25519.PublicKey(rawRepresentation: data)
            else { throw AgeError.invalidRecipient("not an age1pq1… hybrid recipient") }
            publicKey = key
        }

        /// The `age1pq1…` encoding (public).
        public var description: String { Bech32.encode(hrp: "age1pq", data: publicKey.rawRepresentation) }

        /// Wraps `fileKey` with HPKE (X-Wing). Throws `AgeError.invalidRecipient` when HPKE refuses the key.
        public func wrap(fileKey: SecretBytes) throws(AgeError) -> [Stanza] {
            do {
                var sender = try HPKE.Sender(recipientKey: publicKey, ciphersuite: Self.ciphersuite, info: Self.info)
                let body = try fileKey.withUnsafeBytes { try sender.seal($0) }
                return [Stanza(arguments: [Self.stanzaType, RawBase64.encode(sender.encapsulatedKey)], body: body)]
            } catch {
                throw .invalidRecipient("HPKE (X-Wing) refused the hybrid recipient key")
            }
        }
    }

    /// The native hybrid post-quantum identity (`AGE-SECRET-KEY-PQ-1…`): a 32-byte X-Wing seed.
    @available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *)
    public struct HybridIdentity: Identity {
        private let privateKey: XWingMLKEM768X25519.PrivateKey

        /// A new random identity. Throws `AgeError.invalidIdentity` when swift-crypto cannot make an
        /// X-Wing key.
        public init() throws(AgeError) {
            do {
                privateKey = try XWingMLKEM768X25519.PrivateKey()
            } catch {
                throw .invalidIdentity("X-Wing key generation failed")
            }
        }

        /// Parses an `AGE-SECRET-KEY-PQ-1…` identity; throws `AgeError.invalidIdentity` for anything
        /// else (the error never repeats the secret input).
        public init(_ text: String) throws(AgeError) {
            guard let (hrp, data) = Bech32.decode(text), hrp == "AGE-SECRET-KEY-PQ-", data.count == 32,
                let key = try? XWingMLKEM768X25519.PrivateKey(seedRepresentation: data, publicKey: nil)
            else { throw AgeError.invalidIdentity("not an AGE-SECRET-KEY-PQ-1… hybrid identity") }
            privateKey = key
        }

        /// The matching recipient.
        public var recipient: HybridRecipient { HybridRecipient(publicKey: privateKey.publicKey) }

        /// The `AGE-SECRET-KEY-PQ-1…` encoding. It is the secret key.
        public var secretString: String {
            Bech32.encode(hrp: "AGE-SECRET-KEY-PQ-", data: privateKey.seedRepresentation, uppercase: true)
        }

        /// The file key from this identity's hybrid stanza; nil when none opens. Throws
        /// `AgeError.malformedHeader` for a malformed stanza.
        public func unwrap(stanzas: [Stanza]) throws(AgeError) -> SecretBytes? {
            for stanza in stanzas where stanza.type == HybridRecipient.stanzaType {
                guard stanza.arguments.count == 2 else {
                    throw AgeError.malformedHeader("an mlkem768x25519 stanza must have exactly one argument after its type")
                }
                guard let encapsulated = RawBase64.decode(stanza.arguments[1]),
                    encapsulated.count == HybridRecipient.encapsulatedKeyByteCount
                else { throw AgeError.malformedHeader("an mlkem768x25519 enc is not canonical base64 of 1120 bytes") }
                guard stanza.body.count == FileKeyWrap.wrappedByteCount else {
                    throw AgeError.malformedHeader("an mlkem768x25519 stanza body is not 32 bytes")
                }
                var recipient: HPKE.Recipient
                do {
                    recipient = try HPKE.Recipient(
                        privateKey: privateKey, ciphersuite: HybridRecipient.ciphersuite, info: HybridRecipient.info,
                        encapsulatedKey: encapsulated)
                } catch {
                    // X-Wing decapsulation fails only when the X25519 share gives the all-zero secret.
                    throw AgeError.malformedHeader("an mlkem768x25519 enc has a low-order X25519 share")
                }
                if var plain = try? recipient.open(stanza.body) {
                    defer { plain.resetBytes(in: 0..<plain.count) }
                    return SecretBytes(plain)
                }
            }
            return nil
        }
    }
}
