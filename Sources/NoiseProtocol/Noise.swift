/// The Noise Protocol Framework, revision 34 (https://noiseprotocol.org/noise.html): the state
/// machine of its section 5 (`CipherState`, `SymmetricState`, `HandshakeState`), the handshake
/// patterns of its sections 7 and 9, and the functions of sections 12 to 14 that swift-crypto provides.
///
/// Nothing here touches the network: messages go in and out as bytes, so the state machine can be
/// used over any transport and is tested alone against published vectors.
public enum Noise {
    /// The largest Noise message, handshake or transport, in bytes (section 3).
    public static let maxMessageLength = 65_535
    /// The authentication tag added by every encryption under a key, in bytes.
    public static let tagLength = 16
    /// The largest plaintext one transport message can carry (`maxMessageLength - tagLength`).
    public static let maxTransportPayloadLength = maxMessageLength - tagLength

    /// Which side of a handshake a party plays: the initiator sends the first message.
    public enum Role: Sendable, Hashable, CustomStringConvertible {
        /// The party that sends the first handshake message.
        case initiator
        /// The party that receives the first handshake message.
        case responder

        /// The other role.
        public var peer: Role { self == .initiator ? .responder : .initiator }

        /// `initiator` or `responder`.
        public var description: String { self == .initiator ? "initiator" : "responder" }
    }
}
