import Crypto
import Foundation
import SecureCore
import CryptoExtras

/// Encryption of messages of any length to a public key, in the native versioned format "SFK1"
/// (docs/FORMATS.md). X25519 and P-256/384/521 recipients use HPKE (RFC 9180); RSA recipients
/// (2048 bits and up) use RSA-OAEP-SHA256 to wrap a fresh AES-256-GCM key. The header is
/// authenticated, so any modified byte is rejected.
///
/// Sender authentication is explicit: `encrypt(_:to:from:)` makes a message only `decrypt(_:with:from:)`
/// opens, and only with the sender's public key (HPKE auth mode for curve keys; an RSA-PSS-SHA256
/// signature inside the encryption for RSA).
public enum HybridEncryption {
    /// Encrypts `message` to `recipient` (anonymous sender).
    /// Throws `KeyError.wrongKeyType` for an Ed25519 recipient, `unsupportedKeySize` for 1024-bit RSA.
    public static func encrypt(_ message: some DataProtocol, to recipient: AsymmetricPublicKey) throws(KeyError) -> Data {
        try seal(Data(message), to: recipient, from: nil)
    }

    /// Encrypts `message` to `recipient` so the recipient can verify it came from `sender`. The sender
    /// key must be of the same curve as the recipient (HPKE auth mode), or RSA for an RSA recipient.
    /// Throws as `encrypt(_:to:)`, and `wrongKeyType` when the sender key does not fit the recipient.
    public static func encrypt(
        _ message: some DataProtocol, to recipient: AsymmetricPublicKey, from sender: AsymmetricPrivateKey
    ) throws(KeyError) -> Data {
        try seal(Data(message), to: recipient, from: sender)
    }

    /// Decrypts an anonymous-sender message. Throws `unrecognizedMessage`, `truncated`,
    /// `wrongRecipient`, `senderKeyRequired` (the message is sender-authenticated) or `authenticationFailed`.
    public static func decrypt(_ message: some DataProtocol, with key: AsymmetricPrivateKey) throws(KeyError) -> Data {
        try open(Data(message), with: key, expectedSender: nil)
    }

    /// Decrypts a sender-authenticated message and checks it came from `expectedSender`. Throws as
    /// `decrypt(_:with:)`, plus `notSenderAuthenticated` and `unexpectedSender`.
    public static func decrypt(
        _ message: some DataProtocol, with key: AsymmetricPrivateKey, from expectedSender: AsymmetricPublicKey
    ) throws(KeyError) -> Data {
        try open(Data(message), with: key, expectedSender: expectedSender)
    }

    /// The fingerprint of the sender named in a sender-authenticated message, unverified (for
    /// choosing which sender key to try); nil for anonymous messages.
    /// Throws `KeyError.unrecognizedMessage` or `truncated` for a message that is not SFK1.
    public static func claimedSender(of message: some DataProtocol) throws(KeyError) -> KeyFingerprint? {
        try HybridMessage.parsePrefix(Data(message)).0.sender.map(KeyFingerprint.init(bytes:))
    }

    private static func seal(_ message: Data, to recipient: AsymmetricPublicKey, from sender: AsymmetricPrivateKey?) throws(KeyError) -> Data {
        let recipientID = recipient.fingerprint.bytes, senderID = sender?.publicKey.fingerprint.bytes
        switch recipient {
        case .rsa(let key):
            return try RSAHybrid.seal(message, to: key, recipientID: recipientID, sender: sender, senderID: senderID)
        case .ed25519:
            throw KeyError.wrongKeyType(expected: "an encryption key (RSA, P-256/384/521 or X25519)", found: "ed25519")
        default:
            let header = HybridMessage(scheme: sender == nil ? .hpkeBase : .hpkeAuth, recipient: recipientID, sender: senderID).prefix
            return try HPKEHybrid.seal(message, to: recipient, sender: sender, header: header)
        }
    }

    private static func open(_ message: Data, with key: AsymmetricPrivateKey, expectedSender: AsymmetricPublicKey?) throws(KeyError) -> Data {
        let (parsed, rest) = try HybridMessage.parsePrefix(message)
        let isRSA: Bool
        switch key {
        case .rsa: isRSA = true
        case .ed25519: throw KeyError.wrongKeyType(expected: "a decryption key (RSA, P-256/384/521 or X25519)", found: "ed25519")
        default: isRSA = false
        }
        guard parsed.scheme.isHPKE != isRSA else {
            throw KeyError.unrecognizedMessage("scheme 0x0\(parsed.scheme.rawValue) does not fit a \(key.type) key")
        }
        guard ConstantTime.equal(parsed.recipient, key.publicKey.fingerprint.bytes) else { throw KeyError.wrongRecipient }
        switch (parsed.sender, expectedSender) {
        case (nil, nil): break
        case (_?, nil): throw KeyError.senderKeyRequired
        case (nil, _?): throw KeyError.notSenderAuthenticated
        case (let claimed?, let expected?):
            guard claimed == expected.fingerprint.bytes else {
                throw KeyError.unexpectedSender(fingerprint: Hex.encode(claimed))
            }
        }
        let header = parsed.prefix
        if case .rsa(let rsa) = key {
            return try RSAHybrid.open(rest, with: rsa, header: header, sender: expectedSender)
        }
        return try HPKEHybrid.open(rest, with: key, header: header, sender: expectedSender)
    }
}
