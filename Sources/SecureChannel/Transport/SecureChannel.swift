import Crypto
import Foundation
import NIOCore

/// Noise channels over TCP with SwiftNIO: `SecureChannel.Client.connect` and
/// `SecureChannel.Server.bind` run a Noise handshake (by default
/// `Noise_XX_25519_ChaChaPoly_SHA256`), check the peer's static key against a `PeerTrust`, and
/// hand out a `Connection` carrying application messages of any size.
///
/// On the wire (docs/FORMATS.md, "SecureChannel"): every Noise message is one frame, a 2-byte
/// big-endian length then the message; an application message is split into transport messages
/// whose plaintext is a 1-byte flag (`0x00` more follows, `0x01` last) then up to 65,518 bytes;
/// each side's last transport message is the flag `0x02` alone, its authenticated end of stream.
public enum SecureChannel {
    /// Socket reads: NIO's adaptive sizes (a new connection starts at 2 KiB, so idle connections
    /// stay small) growing up to 256 KiB, four full frames, instead of NIO's 64 KiB, under which
    /// every full 65,537-byte frame straddles two reads.
    static let receiveBufferAllocator = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 256 << 10)

    /// The settings both ends must agree on (protocol, prologue) and the local limits.
    public struct Configuration: Sendable {
        /// The Noise protocol; both ends must use the same one.
        public var protocolName: Noise.ProtocolName
        /// The prologue; both ends must use the same one (the default names this framing's version).
        public var prologue: Data
        /// Pre-shared keys, one per `psk` token of the pattern.
        public var presharedKeys: [SymmetricKey]
        /// The time a handshake may take from connection to completion; then `handshakeTimeout`.
        public var handshakeTimeout: TimeAmount
        /// The largest frame accepted, at most 65,535 (the Noise limit); above it, `frameTooLarge`.
        public var maxFrameLength: Int
        /// The largest reassembled application message accepted; above it, `messageTooLarge`.
        /// It bounds what a peer can make a connection hold: inbound, up to ten whole messages
        /// wait for the application to read them (NIO's watermarks, which count messages, not
        /// bytes), plus one being reassembled; so with the default 16 MiB, a connection whose
        /// application reads slowly may hold about 176 MiB. A server of many connections lowers it.
        public var maxMessageLength: Int
        /// Once the peer has begun a frame or a message, the time it has for each whole frame
        /// until the message ends (a term that ends while this side holds its reads back starts
        /// again when they resume); then `messageTimeout`. (A
        /// message left unfinished holds up to `maxMessageLength` bytes.)
        public var messageTimeout: TimeAmount
        /// While bytes we sent wait for the socket, the time in which it must take some of them
        /// (checked once a term, so a stall ends the connection within two terms); then `sendTimeout`. A peer that reads nothing fills the sockets' buffers and then takes
        /// nothing, and keepalive probes, which its kernel answers, never end the connection; this
        /// does, so a writer (and `executeThenClose`) never waits for it without a deadline. (A
        /// server reads nothing from a connection until the application takes it: a client that
        /// sends more than the sockets hold to a server that takes it later than this fails.)
        public var sendTimeout: TimeAmount
        /// Server only: the time a client has to send its first handshake message
        /// (`handshakeTimeout` then), so an idle socket holds a handshake slot only briefly. (A
        /// client waits for the server's answer as long as `handshakeTimeout` allows.)
        public var firstMessageTimeout: TimeAmount
        /// Server only: handshakes allowed in progress at once; a connection beyond them evicts
        /// the oldest handshake in progress.
        public var maxHandshakesInProgress: Int
        /// Server only: authenticated connections waiting to be taken from `connections`; further
        /// ones are closed.
        public var maxPendingConnections: Int
        /// The most bytes of written application messages a connection holds in this process
        /// (queued, being sealed, or sealed and not yet taken by the socket) before
        /// `OutboundWriter.write` suspends; a single larger message is still let through alone.
        public var maxBufferedOutboundBytes: Int
        /// How long `Connection.executeThenClose` waits, after its body returns, for the end of
        /// stream to be written to the socket (a peer that reads nothing holds it back).
        public var closeTimeout: TimeAmount
        /// TCP keepalive on every connection, so a peer that vanished without closing ends an idle
        /// connection within `Keepalive.deadline`; nil leaves the system's default (usually none).
        public var keepalive: Keepalive?

        /// The default prologue: `SecureChannel/2` (version 2 of the framing added the end of stream).
        public static let defaultPrologue = Data("SecureChannel/2".utf8)

        /// Defaults: XX with ChaChaPoly and SHA-256, the default prologue, a 10-second handshake
        /// timeout (3 seconds for a server's client to send its first message), 65,535-byte frames, 16 MiB messages
        /// with 60 seconds for each frame of one begun, 60 seconds for the socket to take some of what waits for it, 64 handshakes, 128 pending connections,
        /// 1 MiB of buffered outbound bytes, a 10-second close timeout, and keepalive probes after
        /// 60 seconds of silence (an idle peer that vanished is noticed within two minutes).
        public init(
            protocolName: Noise.ProtocolName = try! Noise.ProtocolName(parsing: "Noise_XX_25519_ChaChaPoly_SHA256"),
            prologue: Data = defaultPrologue, presharedKeys: [SymmetricKey] = [],
            handshakeTimeout: TimeAmount = .seconds(10), firstMessageTimeout: TimeAmount = .seconds(3), maxFrameLength: Int = Noise.maxMessageLength,
            maxMessageLength: Int = 16 << 20, messageTimeout: TimeAmount = .seconds(60), sendTimeout: TimeAmount = .seconds(60),
            maxHandshakesInProgress: Int = 64,
            maxPendingConnections: Int = 128,
            maxBufferedOutboundBytes: Int = 1 << 20, closeTimeout: TimeAmount = .seconds(10),
            keepalive: Keepalive? = Keepalive()
        ) {
            self.protocolName = protocolName
            self.prologue = prologue
            self.presharedKeys = presharedKeys
            self.handshakeTimeout = handshakeTimeout
            self.firstMessageTimeout = firstMessageTimeout
            self.maxFrameLength = min(maxFrameLength, Noise.maxMessageLength)
            self.maxMessageLength = maxMessageLength
            self.messageTimeout = messageTimeout
            self.sendTimeout = sendTimeout
            self.maxHandshakesInProgress = maxHandshakesInProgress
            self.maxPendingConnections = maxPendingConnections
            self.maxBufferedOutboundBytes = max(1, maxBufferedOutboundBytes)
            self.closeTimeout = closeTimeout
            self.keepalive = keepalive
        }
    }
}
