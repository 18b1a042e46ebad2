import Crypto
import Foundation
import SecureCore

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

    static func seal(_ message: Data, to recipient: AsymmetricPublicKey, sender: AsymmetricPrivateKey?, header: Data) throws(KeyError) -> Data {
        if let sender, sender.type != recipient.type {
            throw KeyError.wrongKeyType(expected: "a sender key of type \(recipient.type)", found: sender.type.rawValue)
        }
        let senderRaw = sender?.agreementRawRepresentation
        switch recipient {
        case .x25519(let key):
            return try seal(message, to: key.rawRepresentation, sender: senderRaw, header: header, suite: x25519, as: Curve25519.KeyAgreement.PrivateKey.self)
        case .p256(let key):
            return try seal(message, to: key.rawRepresentation, sender: senderRaw, header: header, suite: p256, as: P256.KeyAgreement.PrivateKey.self)
        case .p384(let key):
            return try seal(message, to: key.rawRepresentation, sender: senderRaw, header: header, suite: p384, as: P384.KeyAgreement.PrivateKey.self)
        case .p521(let key):
            return try seal(message, to: key.rawRepresentation, sender: senderRaw, header: header, suite: p521, as: P521.KeyAgreement.PrivateKey.self)
        case .rsa, .ed25519:
            throw KeyError.wrongKeyType(expected: "an HPKE recipient (X25519, P-256/384/521)", found: recipient.type.rawValue)
        }
    }

    static func open(_ rest: Data, with key: AsymmetricPrivateKey, header: Data, sender: AsymmetricPublicKey?) throws(KeyError) -> Data {
        if let sender, sender.type != key.type { throw KeyError.unexpectedSender(fingerprint: sender.fingerprint.hex) }
        let senderRaw = sender?.agreementRawRepresentation
        switch key {
        case .x25519(let own):
            return try open(rest, with: own.rawRepresentation, sender: senderRaw, header: header, suite: x25519, as: Curve25519.KeyAgreement.PrivateKey.self)
        case .p256(let own):
            return try open(rest, with: own.rawRepresentation, sender: senderRaw, header: header, suite: p256, as: P256.KeyAgreement.PrivateKey.self)
        case .p384(let own):
            return try open(rest, with: own.rawRepresentation, sender: senderRaw, header: header, suite: p384, as: P384.KeyAgreement.PrivateKey.self)
        case .p521(let own):
            return try open(rest, with: own.rawRepresentation, sender: senderRaw, header: header, suite: p521, as: P521.KeyAgreement.PrivateKey.self)
        case .rsa, .ed25519:
            throw KeyError.wrongKeyType(expected: "an HPKE recipient (X25519, P-256/384/521)", found: key.type.rawValue)
        }
    }

    private static func seal<SK: RawAgreementPrivateKey>(
        _ message: Data, to recipientRaw: Data, sender senderRaw: Data?, header: Data, suite: Suite, as _: SK.Type
    ) throws(KeyError) -> Data {
        let recipient = try curveKey { try SK.PublicKey(rawRepresentation: recipientRaw) }
        guard !recipient.isLowOrder else { throw KeyError.invalidKey("the recipient key is a low-order X25519 point") }
        let info = header + suite.ids
        do {
            var context =
                try senderRaw.map {
                    try HPKE.Sender(recipientKey: recipient, ciphersuite: suite.ciphersuite, info: info, authenticatedBy: SK(rawRepresentation: $0))
                } ?? HPKE.Sender(recipientKey: recipient, ciphersuite: suite.ciphersuite, info: info)
            let ciphertext = try context.seal(message)
            return info + context.encapsulatedKey + ciphertext
        } catch {
            throw KeyError.invalidKey("HPKE refused the recipient or sender key")
        }
    }

    private static func open<SK: RawAgreementPrivateKey>(
        _ rest: Data, with ownRaw: Data, sender senderRaw: Data?, header: Data, suite: Suite, as _: SK.Type
    ) throws(KeyError) -> Data {
        guard rest.count >= suite.ids.count else { throw KeyError.truncated }
        guard rest.prefix(suite.ids.count) == suite.ids else { throw KeyError.unrecognizedMessage("HPKE suite does not fit the key") }
        let encStart = rest.startIndex + suite.ids.count, bodyStart = encStart + suite.encapsulatedKeyLength
        guard rest.endIndex - bodyStart >= 16 else { throw KeyError.truncated }
        let info = header + suite.ids, enc = Data(rest[encStart..<bodyStart])
        let key = try curveKey { try SK(rawRepresentation: ownRaw) }
        let sender = try curveKey { try senderRaw.map { try SK.PublicKey(rawRepresentation: $0) } }
        // RFC 9180, section 7.1.4: a DH giving the zero secret is refused (swift-crypto does not).
        // (An X25519 `enc` is the raw point; the NIST curves' are validated by HPKE as it parses them.)
        if SK.self == Curve25519.KeyAgreement.PrivateKey.self {
            guard let point = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: enc), !point.isLowOrder else {
                throw KeyError.authenticationFailed
            }
        }
        if let sender, sender.isLowOrder { throw KeyError.invalidKey("the sender key is a low-order X25519 point") }
        do {
            var context =
                try sender.map {
                    try HPKE.Recipient(privateKey: key, ciphersuite: suite.ciphersuite, info: info, encapsulatedKey: enc, authenticatedBy: $0)
                } ?? HPKE.Recipient(privateKey: key, ciphersuite: suite.ciphersuite, info: info, encapsulatedKey: enc)
            return try context.open(rest[bodyStart...])
        } catch {
            throw KeyError.authenticationFailed
        }
    }
}

/// swift-crypto key-agreement keys that rebuild from their raw bytes, so one generic path serves
/// every curve (our P-256/384/521 keys are stored as signing keys; the scalar and point are the same).
protocol RawAgreementPrivateKey: HPKEDiffieHellmanPrivateKey where PublicKey: RawAgreementPublicKey {
    init<D: ContiguousBytes>(rawRepresentation: D) throws
}

protocol RawAgreementPublicKey {
    init<D: ContiguousBytes>(rawRepresentation: D) throws
    /// Whether every agreement with this key gives the all-zero secret (an X25519 low-order
    /// point), which swift-crypto's HPKE does not refuse.
    var isLowOrder: Bool { get }
}

extension RawAgreementPublicKey {
    /// The NIST curves' points are validated when parsed: none is of low order.
    var isLowOrder: Bool { false }
}

extension Curve25519.KeyAgreement.PrivateKey: RawAgreementPrivateKey {}
extension Curve25519.KeyAgreement.PublicKey: RawAgreementPublicKey {}
extension P256.KeyAgreement.PrivateKey: RawAgreementPrivateKey {}
extension P256.KeyAgreement.PublicKey: RawAgreementPublicKey {}
extension P384.KeyAgreement.PrivateKey: RawAgreementPrivateKey {}
extension P384.KeyAgreement.PublicKey: RawAgreementPublicKey {}
extension P521.KeyAgreement.PrivateKey: RawAgreementPrivateKey {}
extension P521.KeyAgreement.PublicKey: RawAgreementPublicKey {}

extension AsymmetricPrivateKey {
    /// The raw scalar of a curve key (nil for RSA and Ed25519), for use as a key-agreement key.
    var agreementRawRepresentation: Data? {
        switch self {
        case .x25519(let key): key.rawRepresentation
        case .p256(let key): key.rawRepresentation
        case .p384(let key): key.rawRepresentation
        case .p521(let key): key.rawRepresentation
        case .rsa, .ed25519: nil
        }
    }
}

extension AsymmetricPublicKey {
    /// The raw point of a curve key (nil for RSA and Ed25519), for use as a key-agreement key.
    var agreementRawRepresentation: Data? {
        switch self {
        case .x25519(let key): key.rawRepresentation
        case .p256(let key): key.rawRepresentation
        case .p384(let key): key.rawRepresentation
        case .p521(let key): key.rawRepresentation
        case .rsa, .ed25519: nil
        }
    }
}
