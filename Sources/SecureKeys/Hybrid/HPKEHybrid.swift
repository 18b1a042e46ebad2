import Crypto
import Foundation

/// The HPKE schemes of the native hybrid format: `suite ids (6) || enc || ciphertext`, with
/// `info` = every header byte before `enc` and an empty AAD, single-shot (sequence number 0).
enum HPKEHybrid {
    /// One fixed RFC 9180 suite per recipient key type.
    struct Suite {
        let ciphersuite: HPKE.Ciphersuite
        /// `kem_id || kdf_id || aead_id`, big-endian.
        let ids: Data
        let encapsulatedKeyLength: Int
    }

    static let x25519 = Suite(ciphersuite: .Curve25519_SHA256_ChachaPoly, ids: Data([0x00, 0x20, 0x00, 0x01, 0x00, 0x03]), encapsulatedKeyLength: 32)
    static let p256 = Suite(ciphersuite: .P256_SHA256_AES_GCM_256, ids: Data([0x00, 0x10, 0x00, 0x01, 0x00, 0x02]), encapsulatedKeyLength: 65)
    static let p384 = Suite(ciphersuite: .P384_SHA384_AES_GCM_256, ids: Data([0x00, 0x11, 0x00, 0x02, 0x00, 0x02]), encapsulatedKeyLength: 97)
    static let p521 = Suite(ciphersuite: .P521_SHA512_AES_GCM_256, ids: Data([0x00, 0x12, 0x00, 0x03, 0x00, 0x02]), encapsulatedKeyLength: 133)

    static func seal(_ message: Data, to recipient: AsymmetricPublicKey, sender: AsymmetricPrivateKey?, header: Data) throws -> Data {
        let mismatch = KeyError.wrongKeyType(expected: "a sender key of type \(recipient.type)", found: sender?.type.rawValue ?? "")
        switch recipient {
        case .x25519(let key):
            var senderKey: Curve25519.KeyAgreement.PrivateKey?
            if let sender {
                guard case .x25519(let own) = sender else { throw mismatch }
                senderKey = own
            }
            return try seal(message, to: key, sender: senderKey, header: header, suite: x25519)
        case .p256(let key):
            var senderKey: P256.KeyAgreement.PrivateKey?
            if let sender {
                guard case .p256(let own) = sender else { throw mismatch }
                senderKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: own.rawRepresentation)
            }
            return try seal(message, to: P256.KeyAgreement.PublicKey(rawRepresentation: key.rawRepresentation), sender: senderKey, header: header, suite: p256)
        case .p384(let key):
            var senderKey: P384.KeyAgreement.PrivateKey?
            if let sender {
                guard case .p384(let own) = sender else { throw mismatch }
                senderKey = try P384.KeyAgreement.PrivateKey(rawRepresentation: own.rawRepresentation)
            }
            return try seal(message, to: P384.KeyAgreement.PublicKey(rawRepresentation: key.rawRepresentation), sender: senderKey, header: header, suite: p384)
        case .p521(let key):
            var senderKey: P521.KeyAgreement.PrivateKey?
            if let sender {
                guard case .p521(let own) = sender else { throw mismatch }
                senderKey = try P521.KeyAgreement.PrivateKey(rawRepresentation: own.rawRepresentation)
            }
            return try seal(message, to: P521.KeyAgreement.PublicKey(rawRepresentation: key.rawRepresentation), sender: senderKey, header: header, suite: p521)
        case .rsa, .ed25519:
            throw KeyError.wrongKeyType(expected: "an HPKE recipient (X25519, P-256/384/521)", found: recipient.type.rawValue)
        }
    }

    static func open(_ rest: Data, with key: AsymmetricPrivateKey, header: Data, sender: AsymmetricPublicKey?) throws -> Data {
        let mismatch = KeyError.unexpectedSender(fingerprint: sender?.fingerprint.hex ?? "")
        switch key {
        case .x25519(let own):
            var senderKey: Curve25519.KeyAgreement.PublicKey?
            if let sender {
                guard case .x25519(let theirs) = sender else { throw mismatch }
                senderKey = theirs
            }
            return try open(rest, with: own, sender: senderKey, header: header, suite: x25519)
        case .p256(let own):
            var senderKey: P256.KeyAgreement.PublicKey?
            if let sender {
                guard case .p256(let theirs) = sender else { throw mismatch }
                senderKey = try P256.KeyAgreement.PublicKey(rawRepresentation: theirs.rawRepresentation)
            }
            return try open(rest, with: P256.KeyAgreement.PrivateKey(rawRepresentation: own.rawRepresentation), sender: senderKey, header: header, suite: p256)
        case .p384(let own):
            var senderKey: P384.KeyAgreement.PublicKey?
            if let sender {
                guard case .p384(let theirs) = sender else { throw mismatch }
                senderKey = try P384.KeyAgreement.PublicKey(rawRepresentation: theirs.rawRepresentation)
            }
            return try open(rest, with: P384.KeyAgreement.PrivateKey(rawRepresentation: own.rawRepresentation), sender: senderKey, header: header, suite: p384)
        case .p521(let own):
            var senderKey: P521.KeyAgreement.PublicKey?
            if let sender {
                guard case .p521(let theirs) = sender else { throw mismatch }
                senderKey = try P521.KeyAgreement.PublicKey(rawRepresentation: theirs.rawRepresentation)
            }
            return try open(rest, with: P521.KeyAgreement.PrivateKey(rawRepresentation: own.rawRepresentation), sender: senderKey, header: header, suite: p521)
        case .rsa, .ed25519:
            throw KeyError.wrongKeyType(expected: "an HPKE recipient (X25519, P-256/384/521)", found: key.type.rawValue)
        }
    }

    private static func seal<SK: HPKEDiffieHellmanPrivateKey>(
        _ message: Data, to recipient: SK.PublicKey, sender: SK?, header: Data, suite: Suite
    ) throws -> Data {
        let info = header + suite.ids
        var context =
            try sender.map { try HPKE.Sender(recipientKey: recipient, ciphersuite: suite.ciphersuite, info: info, authenticatedBy: $0) }
            ?? HPKE.Sender(recipientKey: recipient, ciphersuite: suite.ciphersuite, info: info)
        let ciphertext = try context.seal(message)
        return info + context.encapsulatedKey + ciphertext
    }

    private static func open<SK: HPKEDiffieHellmanPrivateKey>(
        _ rest: Data, with key: SK, sender: SK.PublicKey?, header: Data, suite: Suite
    ) throws -> Data {
        guard rest.count >= suite.ids.count else { throw KeyError.truncated }
        guard rest.prefix(suite.ids.count) == suite.ids else { throw KeyError.unrecognizedMessage("HPKE suite does not fit the key") }
        let encStart = rest.startIndex + suite.ids.count, bodyStart = encStart + suite.encapsulatedKeyLength
        guard rest.endIndex - bodyStart >= 16 else { throw KeyError.truncated }
        let info = header + suite.ids, enc = rest[encStart..<bodyStart]
        do {
            var context =
                try sender.map {
                    try HPKE.Recipient(privateKey: key, ciphersuite: suite.ciphersuite, info: info, encapsulatedKey: Data(enc), authenticatedBy: $0)
                } ?? HPKE.Recipient(privateKey: key, ciphersuite: suite.ciphersuite, info: info, encapsulatedKey: Data(enc))
            return try context.open(rest[bodyStart...])
        } catch {
            throw KeyError.authenticationFailed
        }
    }
}
