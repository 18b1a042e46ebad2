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
    ///
    /// An authenticated connection reads nothing from its peer until it is taken from
    /// `connections`: what a peer sends to a connection waiting there stays in the kernel's
    /// socket buffers (NIO reads them only when the peer ends its side, at most a receive
    /// buffer's worth, which the kernel does not grow for a socket nobody reads), so connections
    /// nobody serves yet cost the process little memory (at most `maxPendingConnections` of them
    /// wait; further ones are closed).
    public final class Server: Sendable {
        /// Authenticated connections, in the order their handshakes complete. Ends when the
        /// server is closed.
        public let connections: Connections
        /// The listening channel.
        public let channel: any Channel
        private let slots: HandshakeSlots
        private let waiting: WaitingConnections

        private init(connections: Connections, channel: any Channel, slots: HandshakeSlots, waiting: WaitingConnections) {
            self.connections = connections
            self.channel = channel
            self.slots = slots
            self.waiting = waiting
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
            let waiting = WaitingConnections()
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .serverChannelInitializer { listener in
                    listener.eventLoop.makeCompletedFuture { try listener.pipeline.syncOperations.addHandler(AcceptPause()) }
                }
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .childChannelOption(.recvAllocator, value: SecureChannel.receiveBufferAllocator)
                .childChannelInitializer { child in
                    // A connection the listener accepted as the server closed is closed too.
                    guard case let (slot, evicted)? = slots.admit(child) else {
                        child.close(promise: nil)
                        return child.eventLoop.makeSucceededVoidFuture()
                    }
                    if let evicted {
                        onHandshakeFailure(.tooManyHandshakes)
                        evicted.close(promise: nil)
                    }
                    startHandshake(on: child, role: .responder, staticKey: staticKey, trust: peer, configuration: configuration)
                        .whenComplete { result in
                            let wasEvicted = slots.release(slot)
                            switch result {
                            case .success(let connection):
                                // Runs on the connection's event loop, before it reads again.
                                let established = connection.channel.channel
                                // Evicted (and reported) as it completed: the eviction's close,
                                // from another event loop, is still to come, and a close by this
                                // side would end its inbound sequence as if the stream were whole.
                                guard !wasEvicted,
                                    (try? established.syncOptions?.setOption(.autoRead, value: false)) != nil,
                                    waiting.add(established)
                                else { return established.close(promise: nil) }
                                if case .enqueued = continuation.yield(connection) { return }
                                // The queue is full, or the server closed meanwhile.
                                waiting.remove(established)?.close(promise: nil)
                            case .failure(let error):
                                // An evicted handshake was reported when it was evicted; one the
                                // server's close ended is not a failure.
                                if wasEvicted || waiting.isClosed { return }
                                onHandshakeFailure(HandshakeHandler.channelError(error))
                            }
                        }
                    return child.eventLoop.makeSucceededVoidFuture()
                }
                .bind(host: host, port: port).get()
            channel.closeFuture.whenComplete { _ in
                waiting.closeAll()
                slots.closeAll()
                continuation.finish()
            }
            return Server(connections: Connections(stream: connections, waiting: waiting), channel: channel, slots: slots, waiting: waiting)
        }

        /// Stops listening, closes the handshakes in progress and the connections not yet taken
        /// from `connections`, and ends `connections`; connections already taken stay open.
        public func close() async {
            waiting.closeAll()
            slots.closeAll()
            try? await channel.close()
        }
    }

    /// A server's authenticated connections, in the order their handshakes complete; taking one
    /// lets it read from its peer. Ends when the server is closed (a connection still waiting
    /// then is closed, not handed out).
    public struct Connections: AsyncSequence, Sendable {
        public typealias Element = Connection
        public typealias Failure = Never

        let stream: AsyncStream<Connection>
        let waiting: WaitingConnections

        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(base: stream.makeAsyncIterator(), waiting: waiting)
        }

        /// Hands out the next connection and starts its reading.
        public struct AsyncIterator: AsyncIteratorProtocol {
            public typealias Element = Connection
            public typealias Failure = Never

            var base: AsyncStream<Connection>.AsyncIterator
            let waiting: WaitingConnections

            public mutating func next() async -> Connection? {
                while let connection = await base.next() {
                    let channel = connection.channel.channel
                    // Nil when the server's close already closed it.
                    guard waiting.remove(channel) != nil else { continue }
                    // The option starts the socket's reading itself, past the pipeline: the read
                    // asked through it tells the transport that this side reads again (its
                    // deadline for a message the peer left unfinished counts from now).
                    channel.eventLoop.execute {
                        guard (try? channel.syncOptions?.setOption(.autoRead, value: true)) != nil else { return }
                        channel.read()
                    }
                    return connection
                }
                return nil
            }
        }
    }
}

extension SecureChannel {
    /// The server's authenticated connections not yet taken from `connections`, which read
    /// nothing until taken; closed together when the server closes.
    final class WaitingConnections: Sendable {
        private struct State {
            var closed = false
            var channels: [ObjectIdentifier: any Channel] = [:]
        }

        private let state = Mutex(State())

        /// Whether the server has closed.
        var isClosed: Bool { state.withLock { $0.closed } }

        /// Records a connection waiting to be taken; false once the server has closed (the caller
        /// closes it).
        func add(_ channel: any Channel) -> Bool {
            state.withLock { state in
                guard !state.closed else { return false }
                state.channels[ObjectIdentifier(channel)] = channel
                return true
            }
        }

        /// Removes a waiting connection and returns it; nil when it is not waiting (the server's
        /// close closed it).
        func remove(_ channel: any Channel) -> (any Channel)? {
            state.withLock { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
        }

        /// Closes every waiting connection and refuses later ones.
        func closeAll() {
            let channels = state.withLock { state in
                state.closed = true
                defer { state.channels = [:] }
                return Array(state.channels.values)
            }
            for channel in channels { channel.close(promise: nil) }
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
            var closed = false
        }

        let limit: Int
        private let state = Mutex(State())

        init(limit: Int) { self.limit = max(1, limit) }

        var count: Int { state.withLock { $0.open.count } }

        /// Takes a slot for `channel`; returns its id and the channel evicted to make room, if any
        /// (the caller closes it); nil once the server has closed.
        func admit(_ channel: any Channel) -> (id: UInt64, evicted: (any Channel)?)? {
            state.withLock { state in
                guard !state.closed else { return nil }
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

        /// Frees the slot of a handshake that ended (completed, failed or evicted), and says whether
        /// it was evicted. Every handshake ends once, so its id leaves `evicted` too (one evicted
        /// on another event loop may still have completed; asking only on failure kept its id).
        func release(_ id: UInt64) -> Bool {
            state.withLock { state in
                state.open.removeAll { $0.id == id }
                return state.evicted.remove(id) != nil
            }
        }

        /// Closes every handshake in progress and refuses later ones (the server is closing).
        func closeAll() {
            let open = state.withLock { state in
                state.closed = true
                return state.open.map(\.channel)
            }
            for channel in open { channel.close(promise: nil) }
        }
    }
}

extension SecureChannel {
    /// Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), an accept fails while the
    /// connection stays in the backlog, and NIO's listener, still registered for reads (its read
    /// stays pending after a failed accept, so NIO's own `AcceptBackoffHandler` cannot hold it
    /// back), is woken again at once: its event loop, which serves connections too, would spin
    /// until a descriptor is freed. This stops the listener reading for `pause`, then resumes.
    final class AcceptPause: ChannelInboundHandler {
        typealias InboundIn = Channel
        typealias InboundOut = Channel

        /// How long the listener stops accepting after such a failure.
        static let pause = TimeAmount.seconds(1)
        private var resume: Scheduled<Void>?

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            guard let failure = error as? IOError, [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(failure.errnoCode) else {
                return context.fireErrorCaught(error)
            }
            guard resume == nil, (try? context.channel.syncOptions?.setOption(.autoRead, value: false)) != nil else { return }
            resume = context.eventLoop.assumeIsolated().scheduleTask(in: Self.pause) { [self] in
                resume = nil
                try? context.channel.syncOptions?.setOption(.autoRead, value: true)
            }
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            resume?.cancel()
            resume = nil
        }
    }
}
