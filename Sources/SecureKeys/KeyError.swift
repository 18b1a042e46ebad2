import SecureCore

/// Every failure SecureKeys reports. Each case names one cause; `description` is a sentence a
/// person can act on and never contains key material.
public enum KeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input is not any key encoding this module reads (PEM, DER, OpenSSH, JWK, raw).
    case unrecognizedKeyFormat
    /// The PEM text is malformed or has a label this operation does not accept.
    case malformedPEM(String)
    /// The DER structure (SPKI, PKCS#1, PKCS#8, SEC1, PBES2) does not parse.
    case malformedDER(String)
    /// The OpenSSH public key line or private key file does not parse.
    case malformedOpenSSH(String)
    /// The JWK JSON does not parse or is missing a required member.
    case malformedJWK(String)
    /// The encoding parsed but names an algorithm, curve or cipher this module does not support.
    case unsupportedAlgorithm(String)
    /// The RSA modulus size is not one of the accepted sizes.
    case unsupportedKeySize(Int)
    /// The key values parsed but do not form a valid key (point not on curve, bad RSA numbers).
    case invalidKey(String)
    /// The key is of a different type than the operation needs (for example signing with X25519).
    case wrongKeyType(expected: String, found: String)
    /// The operation or format does not apply to this key (for example PKCS#1 for an EC key).
    case notApplicable(String)
    /// The private key is encrypted and no passphrase was given.
    case passphraseRequired
    /// The passphrase does not open the encrypted private key (or the encrypted data was modified).
    case wrongPassphrase
    /// A cost parameter read from untrusted input is above the ceiling; no derivation was done.
    case costAboveCeiling(String)
    /// The message does not start with the native hybrid magic, or uses an unknown version/scheme.
    case unrecognizedMessage(String)
    /// The message ends before a complete structure was read.
    case truncated
    /// The message was encrypted to a different public key than the one given.
    case wrongRecipient
    /// The message was authenticated by a sender other than the expected one.
    case unexpectedSender(fingerprint: String)
    /// The message is sender-authenticated but no expected sender key was given.
    case senderKeyRequired
    /// A sender was expected but the message is not sender-authenticated.
    case notSenderAuthenticated
    /// Decryption failed: the message was modified, or is not for this key.
    case authenticationFailed
    /// The signature does not verify with this key.
    case invalidSignature
    /// The signature bytes are malformed (wrong length or encoding) for this key type.
    case malformedSignature(String)
    /// A legacy (Heimdall) payload is malformed or does not decrypt with this key.
    case legacyDecryptionFailed(String)
    /// Text that should be base64 is not.
    case malformedBase64
    /// An OpenSSH public key (a key line, or the public key of an OpenSSH private key file) is
    /// refused by SecureCore's SSH key codec: its `SSHPublicKeyError` says why (unsupported key
    /// type, truncated, not a point on the curve, ...).
    case sshKey(SSHPublicKeyError)
    /// An OpenSSH private key file is refused by SecureCore's reader (passphrase-protected, not
    /// exactly one key, damaged): its `OpenSSHKeyFileError`.
    case openSSHKeyFile(OpenSSHKeyFileError)

    /// `text` from the input, for a message: cut to 64 characters, escaped (`PrintableText`) and
    /// quoted, so that a key file cannot write terminal escape sequences into an error.
    static func quoted(_ text: String) -> String { "\"" + PrintableText.escaped(String(text.prefix(64))) + "\"" }

    /// What went wrong, in words for a user; never a secret or an internal detail.
    public var description: String {
        switch self {
        case .unrecognizedKeyFormat:
            "not a key in a recognized format (PEM, DER SPKI/PKCS#1/PKCS#8, OpenSSH, JWK or raw EC)"
        case .malformedPEM(let detail): "malformed PEM: \(detail)"
        case .malformedDER(let detail): "malformed DER: \(detail)"
        case .malformedOpenSSH(let detail): "malformed OpenSSH key: \(detail)"
        case .malformedJWK(let detail): "malformed JWK: \(detail)"
        case .unsupportedAlgorithm(let detail): "unsupported algorithm: \(detail)"
        case .unsupportedKeySize(let bits): "unsupported RSA key size \(bits) bits"
        case .invalidKey(let detail): "invalid key: \(detail)"
        case .wrongKeyType(let expected, let found): "wrong key type: expected \(expected), found \(found)"
        case .notApplicable(let detail): "not applicable: \(detail)"
        case .passphraseRequired: "the private key is encrypted: a passphrase is required"
        case .wrongPassphrase: "wrong passphrase, or the encrypted private key was modified"
        case .costAboveCeiling(let detail): "key derivation cost above ceiling: \(detail)"
        case .unrecognizedMessage(let detail): "not a SecureKeys encrypted message: \(detail)"
        case .truncated: "the data is truncated"
        case .wrongRecipient: "the message was encrypted to a different key"
        case .unexpectedSender(let fingerprint): "the message was sent by an unexpected key (SHA-256 \(fingerprint))"
        case .senderKeyRequired: "the message is sender-authenticated: give the expected sender's public key"
        case .notSenderAuthenticated: "a sender was expected but the message is not sender-authenticated"
        case .authenticationFailed: "decryption failed: the message was modified or is not from the expected sender"
        case .invalidSignature: "the signature is not valid for this key and message"
        case .malformedSignature(let detail): "malformed signature: \(detail)"
        case .legacyDecryptionFailed(let detail): "legacy Heimdall payload does not decrypt: \(detail)"
        case .malformedBase64: "malformed base64"
        case .sshKey(let error): "OpenSSH public key: \(error.description)"
        case .openSSHKeyFile(let error): error.description
        }
    }
}

extension KeyError {
    /// SecureCore's PEM reader refused the text: `malformedPEM` with its reason (PEM decoding
    /// fails only with `malformedEncoding`).
    static func pem(_ error: SecureCoreError) -> KeyError {
        if case .malformedEncoding(let reason) = error { return .malformedPEM(reason) }
        return .malformedPEM(error.description)
    }
}

extension KeyError {
    /// SecureCore's KDF refused the parameters: a cost above the ceiling stays `costAboveCeiling`;
    /// anything else (zero rounds, an unsupported hash) is `unsupportedAlgorithm`.
    static func kdf(_ error: SecureCoreError) -> KeyError {
        if case .costAboveCeiling(let detail) = error { return .costAboveCeiling(detail) }
        return .unsupportedAlgorithm("PBKDF2: \(error.description)")
    }
}
