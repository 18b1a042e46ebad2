import Crypto
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

extension SecureChannel {
    /// The responding side: accepts TCP connections, runs at most
    /// `maxHandshakesInProgress` handshakes at once (closing further connections at once), and
    /// yields each authenticated connection on `connections`. A failed handshake closes only
    /// its own connection; the server keeps serving.
    public final class Server: Sendable {
        /// Authenticated connections, in the order their handshakes complete. Ends when the
        /// server is closed.
        public let connections: AsyncStream<Connection>
        /// The listening channel.
        public let channel: any Channel
        private let counters: NIOLockedValueBox<Int>

        private init(connections: AsyncStream<Connection>, channel: any Channel, counters: NIOLockedValueBox<Int>) {
            self.connections = connections
            self.channel = channel
            self.counters = counters
        }

        /// The port the server listens on (useful after binding port 0).
        public var port: Int { channel.localAddress?.port ?? 0 }

        /// The number of handshakes in progress now.
        public var handshakesInProgress: Int { counters.withLockedValue { $0 } }

        /// Listens on `host:port` with `staticKey`, accepting peers that satisfy `peer`.
        /// `onHandshakeFailure` hears why each rejected connection failed (for logging; it must
        /// not block).
        public static func bind(
            host: String, port: Int, staticKey: Curve25519.KeyAgreement.PrivateKey?, peer: PeerTrust,
            configuration: Configuration = Configuration(),
            group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
            onHandshakeFailure: @escaping @Sendable (SecureChannelError) -> Void = { _ in }
        ) async throws -> Server {
            _ = try HandshakeHandler.makeHandshakeState(
                role: .responder, staticKey: staticKey, trust: peer, configuration: configuration)
            let (connections, continuation) = AsyncStream.makeStream(
                of: Connection.self, bufferingPolicy: .bufferingOldest(configuration.maxPendingConnections))
            let inProgress = NIOLockedValueBox(0)
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .childChannelOption(.recvAllocator, value: SecureChannel.receiveBufferAllocator)
                .childChannelInitializer { child in
                    let admitted = inProgress.withLockedValue { count in
                        guard count < configuration.maxHandshakesInProgress else { return false }
                        count += 1
                        return true
                    }
                    guard admitted else {
                        onHandshakeFailure(.tooManyHandshakes)
                        return child.close()
                    }
                    startHandshake(on: child, role: .responder, staticKey: staticKey, trust: peer, configuration: configuration)
                        .whenComplete { result in
                            inProgress.withLockedValue { $0 -= 1 }
                            switch result {
                            case .success(let connection):
                                if case .dropped = continuation.yield(connection) { connection.channel.channel.close(promise: nil) }
                            case .failure(let error):
                                onHandshakeFailure(HandshakeHandler.channelError(error))
                            }
                        }
                    return child.eventLoop.makeSucceededVoidFuture()
                }
                .bind(host: host, port: port).get()
            channel.closeFuture.whenComplete { _ in continuation.finish() }
            return Server(connections: connections, channel: channel, counters: inProgress)
        }

        /// Stops listening and ends `connections`; established connections stay open.
        public func close() async {
            try? await channel.close()
        }
    }
}
