import Crypto
import NIOCore
import NIOPosix
import Synchronization

extension SecureChannel {
    /// The responding side: accepts TCP connections, runs at most `maxHandshakesInProgress`
    /// handshakes at once, and yields each authenticated connection on `connections`. A failed
    /// handshake closes only its own connection; the server keeps serving.
    ///
    /// Holding a handshake slot is made expensive and serving an honest client cheap (as
    /// OpenSSH's `MaxStartups` and nginx do): a peer must send its first handshake message
    /// within `firstMessageTimeout`, and when every slot is taken a new connection evicts the
    /// oldest handshake in progress (reported as `tooManyHandshakes`) instead of being refused.
    /// An honest handshake completes in one round trip, so idle sockets, not honest clients,
    /// are the oldest.
    public final class Server: Sendable {
        /// Authenticated connections, in the order their handshakes complete. Ends when the
        /// server is closed.
        public let connections: AsyncStream<Connection>
        /// The listening channel.
        public let channel: any Channel
        private let slots: HandshakeSlots

        private init(connections: AsyncStream<Connection>, channel: any Channel, slots: HandshakeSlots) {
            self.connections = connections
            self.channel = channel
            self.slots = slots
        }

        /// The port the server listens on (useful after binding port 0).
        public var port: Int { channel.localAddress?.port ?? 0 }

        /// The number of handshakes in progress now.
        public var handshakesInProgress: Int { slots.count }

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
            let slots = HandshakeSlots(limit: configuration.maxHandshakesInProgress)
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .childChannelOption(.recvAllocator, value: SecureChannel.receiveBufferAllocator)
                .childChannelInitializer { child in
                    let (slot, evicted) = slots.admit(child)
                    if let evicted {
                        onHandshakeFailure(.tooManyHandshakes)
                        evicted.close(promise: nil)
                    }
                    startHandshake(on: child, role: .responder, staticKey: staticKey, trust: peer, configuration: configuration)
                        .whenComplete { result in
                            slots.release(slot)
                            switch result {
                            case .success(let connection):
                                if case .dropped = continuation.yield(connection) { connection.channel.channel.close(promise: nil) }
                            case .failure(let error):
                                // An evicted handshake was reported when it was evicted.
                                if slots.wasEvicted(slot) { return }
                                onHandshakeFailure(HandshakeHandler.channelError(error))
                            }
                        }
                    return child.eventLoop.makeSucceededVoidFuture()
                }
                .bind(host: host, port: port).get()
            channel.closeFuture.whenComplete { _ in continuation.finish() }
            return Server(connections: connections, channel: channel, slots: slots)
        }

        /// Stops listening and ends `connections`; established connections stay open.
        public func close() async {
            try? await channel.close()
        }
    }
}

extension SecureChannel {
    /// The server's handshakes in progress, oldest first, at most `limit`: admitting one more
    /// evicts the oldest.
    final class HandshakeSlots: Sendable {
        private struct State {
            var nextID: UInt64 = 0
            var open: [(id: UInt64, channel: any Channel)] = []
            var evicted = Set<UInt64>()
        }

        let limit: Int
        private let state = Mutex(State())

        init(limit: Int) { self.limit = max(1, limit) }

        var count: Int { state.withLock { $0.open.count } }

        /// Takes a slot for `channel`; returns its id and the channel evicted to make room, if any
        /// (the caller closes it).
        func admit(_ channel: any Channel) -> (id: UInt64, evicted: (any Channel)?) {
            state.withLock { state in
                state.nextID += 1
                var evicted: (any Channel)?
                if state.open.count >= limit {
                    let oldest = state.open.removeFirst()
                    state.evicted.insert(oldest.id)
                    evicted = oldest.channel
                }
                state.open.append((state.nextID, channel))
                return (state.nextID, evicted)
            }
        }

        /// Frees the slot of a handshake that ended (completed, failed or evicted).
        func release(_ id: UInt64) {
            state.withLock { state in state.open.removeAll { $0.id == id } }
        }

        /// Whether the handshake `id` was evicted (asked once, when it ends).
        func wasEvicted(_ id: UInt64) -> Bool {
            state.withLock { $0.evicted.remove(id) != nil }
        }
    }
}
