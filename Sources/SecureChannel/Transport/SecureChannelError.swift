import SecureKeyStore
import SecureKeys

/// Why a secure channel failed. None of the cases carries key material; fingerprints are public.
public enum SecureChannelError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The handshake did not complete within the configured time, or the peer sent nothing
    /// within `firstMessageTimeout`.
    case handshakeTimeout
    /// The peer closed the connection before the handshake completed (a truncated handshake).
    case connectionClosedDuringHandshake
    /// The peer's static key is not the expected one: `expected` describes what was expected
    /// (a fingerprint), `actual` is the fingerprint of the key the peer proved it holds.
    case peerKeyMismatch(expected: String, actual: KeyFingerprint)
    /// Trust on first use: the confirmation callback refused this new peer key.
    case peerRejected(actual: KeyFingerprint)
    /// The pattern authenticates no peer static key (for example NN), but the trust policy needs one.
    case peerNotAuthenticated
    /// The pattern is one-way (N, K, X): its responder can send nothing (not even its end of
    /// stream) and adds nothing fresh to the handshake, so a recorded session would replay in full.
    case oneWayPattern
    /// The pattern needs the peer's static key before the handshake (IK, NK, XK, KK) and the
    /// trust policy does not hold one (pin the key or use XX).
    case peerKeyRequired
    /// A frame announced more bytes than the configured maximum.
    case frameTooLarge(length: Int, limit: Int)
    /// A frame of length zero (no Noise message is empty).
    case emptyFrame
    /// The connection ended inside a frame.
    case truncatedFrame
    /// The peer closed the connection (shut its output, or reset it) without sending its end of
    /// stream: what arrived may be only part of what it sent.
    case closedBeforeEndOfStream
    /// The peer stopped answering: keepalive probes (`Configuration.keepalive`) or data sent
    /// went unacknowledged until the system gave up (the peer vanished without closing, or the
    /// network to it did).
    case peerUnresponsive
    /// Our end of stream could not be written within `Configuration.closeTimeout` (the peer
    /// reads nothing).
    case closeTimeout
    /// The connection closed (the peer closed it, or it failed) before our end of stream was
    /// written: the peer cannot tell that it received everything we sent.
    case endOfStreamNotSent
    /// The peer began a frame or a message and sent no whole frame of it within
    /// `Configuration.messageTimeout` (while this side was reading).
    case messageTimeout
    /// Bytes we sent waited in this process for a whole `Configuration.sendTimeout` term (checked
    /// once a term) with none of them taken by the socket (the peer reads nothing, while its
    /// kernel keeps the connection alive).
    case sendTimeout
    /// A reassembled application message would exceed the configured maximum.
    case messageTooLarge(limit: Int)
    /// A transport message's plaintext does not follow the application framing (empty, an
    /// unknown flag byte, an end of stream with data or inside a message, or anything after the
    /// end of stream).
    case malformedApplicationFrame
    /// The Noise layer failed (authentication, nonce, message length, ...).
    case noise(NoiseError)
    /// The key under this tag is not an X25519 key pair or partner key.
    case notAnX25519Key(tag: String, type: KeyType)
    /// Storing or reading a trusted peer key in the key store failed: the store's error.
    case keyStoreFailed(KeyStoreError)
    /// The connection had ended without a failure of the stream (after the peer's end of stream,
    /// closed by this side, or by a socket error of no meaning for the stream) when a message was
    /// written: nothing more can be sent on it.
    case connectionClosed
    /// The server had its maximum of handshakes in progress and a newer connection came: this,
    /// the oldest handshake, was closed to make room.
    case tooManyHandshakes

    /// What went wrong, as a sentence for a person.
    public var description: String {
        switch self {
        case .handshakeTimeout: "handshake timeout"
        case .connectionClosedDuringHandshake: "the peer closed the connection during the handshake"
        case .peerKeyMismatch(let expected, let actual): "peer key mismatch: expected \(expected), got \(actual)"
        case .peerRejected(let actual): "new peer key \(actual) was not accepted"
        case .peerNotAuthenticated: "the handshake pattern does not authenticate the peer, but a trusted peer key is required"
        case .oneWayPattern: "one-way Noise patterns (N, K, X) cannot carry a channel: the responder could not answer, and a recorded session would replay"
        case .peerKeyRequired: "the handshake pattern needs the peer's static key in advance (pin it, or use XX)"
        case .frameTooLarge(let length, let limit): "frame of \(length) bytes exceeds the limit of \(limit)"
        case .emptyFrame: "empty frame"
        case .truncatedFrame: "the connection ended inside a frame"
        case .closedBeforeEndOfStream: "connection closed before the end of the stream"
        case .peerUnresponsive: "the peer stopped answering (it, or the network to it, is gone)"
        case .closeTimeout: "the end of the stream could not be sent in time (the peer is not reading)"
        case .endOfStreamNotSent: "the connection closed before our end of the stream was sent (the peer may not have received everything)"
        case .messageTimeout: "the peer began a message and did not go on with it in time"
        case .sendTimeout: "the peer took nothing we sent in time (it is not reading)"
        case .messageTooLarge(let limit): "application message exceeds the limit of \(limit) bytes"
        case .malformedApplicationFrame: "malformed application frame"
        case .noise(let error): error.description
        case .notAnX25519Key(let tag, let type): "key \"\(tag)\" is \(type), not x25519"
        case .keyStoreFailed(let error): "key store: \(error.description)"
        case .connectionClosed: "the connection is closed: nothing more can be sent"
        case .tooManyHandshakes: "too many handshakes in progress: the oldest was dropped"
        }
    }
}
