import Crypto
import NIOCore
import NIOPosix

extension SecureChannel {
    /// The initiating side of a secure channel.
    public enum Client {
        /// Connects over TCP to `host:port`, runs the handshake as initiator with `staticKey`
        /// (nil for patterns where the initiator has none, such as NN or NK), and returns the
        /// connection once the peer's key satisfies `peer`.
        ///
        /// Throws `SecureChannelError` (`handshakeTimeout`, `peerKeyMismatch`, `noise(...)`,
        /// `connectionClosedDuringHandshake`, ...) or NIO's connection errors; on any error the
        /// connection is closed.
        public static func connect(
            host: String, port: Int, staticKey: Curve25519.KeyAgreement.PrivateKey?, peer: PeerTrust,
            configuration: Configuration = Configuration(),
            group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
        ) async throws -> Connection {
            _ = try HandshakeHandler.makeHandshakeState(
                role: .initiator, staticKey: staticKey, trust: peer, configuration: configuration)
            // The handshake handlers are installed before the connection is active, so no byte is missed.
            let connection = try await ClientBootstrap(group: group)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelOption(.allowRemoteHalfClosure, value: true)
                .channelOption(.recvAllocator, value: SecureChannel.receiveBufferAllocator)
                .connectTimeout(configuration.handshakeTimeout)
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeSucceededFuture(
                        startHandshake(on: channel, role: .initiator, staticKey: staticKey, trust: peer, configuration: configuration))
                }
            return try await connection.get()
        }
    }
}
