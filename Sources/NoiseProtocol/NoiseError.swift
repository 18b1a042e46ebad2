/// Why a Noise operation failed. Every failure of a handshake or transport message is one of these
/// cases; none carries key material.
public enum NoiseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The protocol name is not of the form `Noise_PATTERN_DH_CIPHER_HASH`.
    case malformedProtocolName(String)
    /// The handshake pattern is not one this implementation knows (for example `XXfallback`).
    case unsupportedPattern(String)
    /// The DH function is not supported (only `25519`; `448` is not in swift-crypto).
    case unsupportedDH(String)
    /// The cipher is not supported (only `ChaChaPoly` and `AESGCM`).
    case unsupportedCipher(String)
    /// The hash is not supported (only `SHA256` and `SHA512`; BLAKE2 is not in swift-crypto).
    case unsupportedHash(String)
    /// A pattern modifier is malformed or unknown (for example `psk` without a number, or `fallback`).
    case invalidModifier(String)
    /// The handshake pattern breaks one of the validity rules of section 7.3; the reason says which.
    case invalidPattern(String)
    /// The pattern lets a party send encrypted data after a `psk` token without having sent an
    /// ephemeral key first (the PSK validity rule of section 9.3).
    case pskWithoutEphemeral
    /// The pattern needs this party's static key pair and none was given.
    case missingLocalStaticKey
    /// The pattern needs the peer's static public key before the handshake and none was given.
    case missingRemoteStaticKey
    /// The number of pre-shared keys differs from the number of `psk` tokens in the pattern.
    case wrongPresharedKeyCount(expected: Int, given: Int)
    /// A pre-shared key is not 32 bytes.
    case invalidPresharedKeyLength
    /// The message would exceed 65,535 bytes (or a transport payload 65,519 bytes).
    case messageTooLong(Int)
    /// The message is shorter than the pattern requires (truncated).
    case messageTooShort
    /// Authentication of a ciphertext failed: it was altered, truncated, replayed out of order, or
    /// made with another key, prologue or peer.
    case decryptionFailed
    /// The nonce reached 2^64-1, which is reserved: the cipher state can no longer be used.
    case nonceExhausted
    /// A public key received or given is not a valid X25519 key, or the DH result is degenerate.
    case invalidPublicKey
    /// A handshake message was written when one should be read, or the reverse.
    case outOfTurn
    /// The handshake is already complete: use the transport state.
    case handshakeAlreadyComplete
    /// The handshake is not complete yet: no transport state exists.
    case handshakeIncomplete
    /// An earlier error aborted this handshake (section 5.3); the state cannot be used any more.
    case handshakeAborted
    /// In a one-way pattern the responder cannot send transport messages.
    case oneWayPattern

    /// What went wrong, for logs and error messages.
    public var description: String {
        switch self {
        case .malformedProtocolName(let name): "malformed Noise protocol name '\(name)'"
        case .unsupportedPattern(let name): "unsupported Noise handshake pattern '\(name)'"
        case .unsupportedDH(let name): "unsupported Noise DH function '\(name)' (only 25519)"
        case .unsupportedCipher(let name): "unsupported Noise cipher '\(name)' (only ChaChaPoly and AESGCM)"
        case .unsupportedHash(let name): "unsupported Noise hash '\(name)' (only SHA256 and SHA512)"
        case .invalidModifier(let name): "invalid Noise pattern modifier '\(name)'"
        case .invalidPattern(let reason): "invalid Noise handshake pattern: \(reason)"
        case .pskWithoutEphemeral: "a party would send encrypted data after a psk token without having sent an ephemeral key"
        case .missingLocalStaticKey: "the handshake pattern needs a local static key"
        case .missingRemoteStaticKey: "the handshake pattern needs the peer's static public key in advance"
        case .wrongPresharedKeyCount(let expected, let given): "the pattern needs \(expected) pre-shared keys, \(given) given"
        case .invalidPresharedKeyLength: "a pre-shared key must be 32 bytes"
        case .messageTooLong(let length): "Noise message of \(length) bytes exceeds the limit"
        case .messageTooShort: "Noise message is truncated"
        case .decryptionFailed: "Noise message failed authentication"
        case .nonceExhausted: "Noise nonce exhausted"
        case .invalidPublicKey: "invalid X25519 public key"
        case .outOfTurn: "Noise handshake message out of turn"
        case .handshakeAlreadyComplete: "the Noise handshake is already complete"
        case .handshakeIncomplete: "the Noise handshake is not complete"
        case .handshakeAborted: "the Noise handshake was aborted by an earlier error"
        case .oneWayPattern: "the responder of a one-way Noise pattern cannot send"
        }
    }
}
