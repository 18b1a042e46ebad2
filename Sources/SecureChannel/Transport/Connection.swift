import Crypto
import Foundation
import NIOCore
import SecureKeys

extension SecureChannel {
    /// An authenticated channel: the peer proved it holds `peerStaticKey` and the trust policy
    /// accepted it. Application messages come in through `inbound` and go out through `outbound`
    /// (inside `executeThenClose`), each of any size up to the configured maximum, with
    /// backpressure in both directions: inbound, NIOAsyncChannel's watermarks; outbound, the
    /// `OutboundWriter` suspends while `Configuration.maxBufferedOutboundBytes` of written messages
    /// are still in the process.
    public struct Connection: Sendable {
        /// The peer's verified static public key; nil for patterns without one (NN).
        public let peerStaticKey: Curve25519.KeyAgreement.PublicKey?
        /// The handshake hash, identical at both ends, for channel binding.
        public let handshakeHash: Data
        /// The underlying channel carrying application messages. (Writing through its own
        /// outbound writer bypasses the pacing of `executeThenClose`'s `OutboundWriter`.)
        public let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        /// The outbound byte count the writer is paced by.
        let pacing: OutboundPacing

        /// The SHA-256 SPKI fingerprint of `peerStaticKey` (what `sf key fingerprint` shows).
        public var peerFingerprint: KeyFingerprint? { peerStaticKey.map(SecureChannel.fingerprint(of:)) }

        /// Wraps an established channel; must run on its event loop, before it reads again, so no
        /// inbound message is lost.
        init(wrapping channel: Channel, _ established: Established) throws {
            peerStaticKey = established.peerStaticKey
            handshakeHash = established.handshakeHash
            pacing = established.pacing
            self.channel = try NIOAsyncChannel(wrappingChannelSynchronously: channel)
        }

        /// Runs `body` with the inbound messages and the paced outbound writer, then closes the
        /// connection. The inbound sequence ends when the peer closes and throws a
        /// `SecureChannelError` when a message fails authentication or framing. Messages the
        /// writer accepted may still be buffered when `body` returns; closing then sends what was
        /// flushed to the socket, so a body that must know its messages arrived waits for the
        /// peer's answer.
        public func executeThenClose<Result>(
            _ body: (_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, _ outbound: OutboundWriter) async throws -> Result
        ) async throws -> Result {
            let pacing = self.pacing
            return try await channel.executeThenClose { inbound, outbound in
                try await body(inbound, OutboundWriter(writer: outbound, pacing: pacing))
            }
        }
    }

    /// Installs the frame decoder and the handshake on `channel` and returns the future connection,
    /// created on the channel's event loop as the handshake completes.
    static func startHandshake(
        on channel: Channel, role: Noise.Role, staticKey: Curve25519.KeyAgreement.PrivateKey?, trust: PeerTrust,
        configuration: Configuration
    ) -> EventLoopFuture<Connection> {
        channel.eventLoop.assertInEventLoop()
        let established = channel.eventLoop.makePromise(of: Established.self)
        do {
            let handshake = try HandshakeHandler(
                role: role, staticKey: staticKey, trust: trust, configuration: configuration, established: established)
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(FrameDecoder(maxFrameLength: configuration.maxFrameLength))
            try sync.addHandler(handshake)
        } catch {
            established.fail(HandshakeHandler.channelError(error))
            channel.close(promise: nil)
        }
        return established.futureResult.assumeIsolated().flatMapThrowing { established in
            try Connection(wrapping: channel, established)
        }.nonisolated()
    }
}
