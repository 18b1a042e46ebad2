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
        /// Whether our end of stream is sent, and whether it was written.
        let streamEnd: StreamEnd
        /// How long `executeThenClose` waits for its end of stream to be written.
        let closeTimeout: TimeAmount
        /// True when the trust policy is trust on first use and this connection was the first
        /// contact: the peer's key was not checked against anything, only stored for the next
        /// connections (tell the user, as ssh's "Permanently added" does, so that they can compare
        /// its fingerprint). False when the key matched a stored, pinned or expected one.
        public let isPeerKeyNewlyTrusted: Bool

        /// The SHA-256 SPKI fingerprint of `peerStaticKey` (what `sf key fingerprint` shows).
        public var peerFingerprint: KeyFingerprint? { peerStaticKey.map(SecureChannel.fingerprint(of:)) }

        /// Wraps an established channel; must run on its event loop, before it reads again, so no
        /// inbound message is lost.
        init(wrapping channel: Channel, _ established: Established, closeTimeout: TimeAmount) throws {
            peerStaticKey = established.peerStaticKey
            isPeerKeyNewlyTrusted = established.isPeerKeyNewlyTrusted
            handshakeHash = established.handshakeHash
            pacing = established.pacing
            streamEnd = established.streamEnd
            self.closeTimeout = closeTimeout
            // Finishing the outbound writer closes the output: the end of stream goes out.
            self.channel = try NIOAsyncChannel(
                wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }

        /// Runs `body` with the inbound messages and the paced outbound writer, then closes the
        /// connection.
        ///
        /// The inbound sequence ends at the peer's authenticated end of stream; it throws a
        /// `SecureChannelError` when a message fails authentication or framing, and
        /// `closedBeforeEndOfStream` when the connection ends without the peer's end of stream
        /// (so a cut transfer never looks complete).
        ///
        /// When `body` returns, the end of stream is sent after every message written (if
        /// `outbound.finish()` did not send it already) and this waits until it is written to the
        /// socket (at most `Configuration.closeTimeout`, then `closeTimeout`), then closes. When
        /// `body` throws, the connection closes without an end of stream, so the peer learns the
        /// stream was cut. A body that must know its messages were read waits for the peer's
        /// answer or its end of stream. (Using `channel.executeThenClose` directly bypasses this:
        /// its writer's `finish()` sends the end of stream even when its body throws.)
        public func executeThenClose<Result>(
            _ body: (_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, _ outbound: OutboundWriter) async throws -> Result
        ) async throws -> Result {
            let (pacing, streamEnd, closeTimeout) = (self.pacing, self.streamEnd, self.closeTimeout)
            let eventLoop = channel.channel.eventLoop
            return try await channel.executeThenClose { inbound, outbound in
                let result: Result
                do {
                    result = try await body(inbound, OutboundWriter(writer: outbound, pacing: pacing))
                } catch {
                    streamEnd.abort()
                    throw error
                }
                outbound.finish()
                let deadline = eventLoop.scheduleTask(in: closeTimeout) {
                    streamEnd.settle(.failure(SecureChannelError.closeTimeout))
                }
                defer { deadline.cancel() }
                try await streamEnd.written()
                return result
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
            try configuration.keepalive?.apply(to: channel)
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(FrameDecoder(maxFrameLength: configuration.maxFrameLength))
            try sync.addHandler(handshake)
        } catch {
            established.fail(HandshakeHandler.channelError(error))
            channel.close(promise: nil)
        }
        return established.futureResult.assumeIsolated().flatMapThrowing { established in
            try Connection(wrapping: channel, established, closeTimeout: configuration.closeTimeout)
        }.nonisolated()
    }
}
