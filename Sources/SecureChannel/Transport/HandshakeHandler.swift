import Crypto
import Foundation
import NIOCore
import NIOFoundationCompat
import SecureKeyStore
import SecureKeys

extension SecureChannel {
    /// What a completed, trusted handshake established; the promise value of `HandshakeHandler`.
    struct Established: Sendable {
        let peerStaticKey: Curve25519.KeyAgreement.PublicKey?
        /// The trust policy stored the peer's key now (trust on first use, first contact).
        let isPeerKeyNewlyTrusted: Bool
        let handshakeHash: Data
        let pacing: OutboundPacing
        let streamEnd: StreamEnd
    }

    /// Runs the Noise handshake over frames (writing its own frames), within the timeout, checking the peer's static key
    /// as soon as it is known. On success it installs a `TransportHandler` behind itself and
    /// succeeds `established`; on any failure it fails the promise and closes the connection, so
    /// nothing the peer sent is ever delivered.
    final class HandshakeHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private enum Phase { case handshaking, established, failed }

        private let state: Noise.HandshakeState
        private let trust: PeerTrust
        private let configuration: Configuration
        private let established: EventLoopPromise<Established>
        private var phase = Phase.handshaking
        private var started = false
        private var timeout: Scheduled<Void>?
        private var firstMessageTimeout: Scheduled<Void>?
        private var peerChecked = false
        private var storeAfterHandshake: PeerTrust.FirstUse?
        /// Whether the peer's static key counts as the peer's: whether it proves it holds it
        /// (`provesPeerStaticKey`).
        private let provesPeerKey: Bool
        /// The message after which the peer has proven it holds its static key, if it ever does
        /// (`messageProvingPeerStaticKey`).
        private let peerKeyProof: Int?

        init(
            role: Noise.Role, staticKey: Curve25519.KeyAgreement.PrivateKey?, trust: PeerTrust, configuration: Configuration,
            established: EventLoopPromise<Established>
        ) throws {
            state = try Self.makeHandshakeState(role: role, staticKey: staticKey, trust: trust, configuration: configuration)
            peerKeyProof = configuration.protocolName.pattern.messageProvingPeerStaticKey(to: role)
            provesPeerKey = peerKeyProof != nil
            self.trust = trust
            self.configuration = configuration
            self.established = established
        }

        /// The Noise handshake for these settings; the same checks run before any connection is
        /// made (`peerKeyRequired`, `noise(missingLocalStaticKey)`, `noise(wrongPresharedKeyCount)`, ...).
        static func makeHandshakeState(
            role: Noise.Role, staticKey: Curve25519.KeyAgreement.PrivateKey?, trust: PeerTrust, configuration: Configuration
        ) throws(SecureChannelError) -> Noise.HandshakeState {
            let pattern = configuration.protocolName.pattern
            // In a one-way pattern the responder adds nothing fresh: a recorded session replays in
            // full to it, and it cannot send even its end of stream.
            if pattern.isOneWay { throw .oneWayPattern }
            // A pattern that never makes the peer prove its static key (the responder of IX, the
            // initiator of XX1, ...) cannot serve a policy that trusts a key: anyone could send
            // the trusted public key and be taken for its holder.
            if !trust.isAnonymous && !pattern.provesPeerStaticKey(to: role) { throw .peerNotAuthenticated }
            let needsPeerKey = (role == .initiator ? pattern.responderPreMessage : pattern.initiatorPreMessage).contains(.s)
            // Only a pattern that needs it reads the key store before the peer has said a word.
            let known = needsPeerKey ? try trust.knownKey() : nil
            if needsPeerKey && known == nil { throw .peerKeyRequired }
            do {
                return try Noise.HandshakeState(
                    protocolName: configuration.protocolName, role: role, prologue: configuration.prologue,
                    staticKey: staticKey, remoteStaticKey: needsPeerKey ? known : nil,
                    presharedKeys: configuration.presharedKeys)
            } catch {
                throw .noise(error)
            }
        }

        func handlerAdded(context: ChannelHandlerContext) {
            timeout = context.eventLoop.assumeIsolated().scheduleTask(in: configuration.handshakeTimeout) { [self] in
                fail(context: context, error: .handshakeTimeout)
            }
            if context.channel.isActive { start(context: context) }
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            timeout?.cancel()
            firstMessageTimeout?.cancel()
            if phase == .handshaking { established.fail(SecureChannelError.connectionClosedDuringHandshake) }
        }

        func channelActive(context: ChannelHandlerContext) {
            start(context: context)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch phase {
            case .established: context.fireChannelRead(data)
            case .failed: break
            case .handshaking:
                firstMessageTimeout?.cancel()
                let frame = unwrapInboundIn(data)
                do {
                    // Handshake payloads are authenticated but not delivered: the channel carries
                    // application data only after the peer is trusted.
                    _ = try state.readMessage(frame.readableBytesView)
                    try checkPeer()
                    try advance(context: context)
                } catch {
                    fail(context: context, error: Self.channelError(error))
                }
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            if phase == .handshaking { fail(context: context, error: .connectionClosedDuringHandshake) }
            context.fireChannelInactive()
        }

        /// The peer shut its output (connections allow half-closure, for the end of stream).
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if phase == .handshaking, case ChannelEvent.inputClosed = event {
                fail(context: context, error: .connectionClosedDuringHandshake)
            } else {
                context.fireUserInboundEventTriggered(event)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: Error) {
            if phase == .handshaking {
                fail(context: context, error: Self.channelError(error))
            } else {
                context.fireErrorCaught(error)
            }
        }

        private func start(context: ChannelHandlerContext) {
            guard !started, phase == .handshaking else { return }
            started = true
            // Only for a peer that speaks first (a server's client): a server's first message
            // comes after its own work, which the handshake's deadline covers. From the connection,
            // not from the handler: a client's TCP connect (a SYN sent again after a loss takes
            // 1 s, then 3 s) does not count against the peer's first message.
            if !state.isMyTurn {
                firstMessageTimeout = context.eventLoop.assumeIsolated().scheduleTask(
                    in: min(configuration.firstMessageTimeout, configuration.handshakeTimeout)
                ) { [self] in
                    fail(context: context, error: .handshakeTimeout)
                }
            }
            do { try advance(context: context) } catch { fail(context: context, error: Self.channelError(error)) }
        }

        /// Writes this party's messages while it is its turn, then finishes once complete.
        private func advance(context: ChannelHandlerContext) throws {
            while state.isMyTurn {
                let message = try state.writeMessage()
                context.write(wrapOutboundOut(try FrameEncoder.frame(message, allocator: context.channel.allocator)), promise: nil)
            }
            context.flush()
            if state.isComplete { try finish(context: context) }
        }

        /// Checks the peer's key once the handshake has authenticated it (the peer proved it holds
        /// it), before this party sends anything more (so a wrong responder never sees the
        /// initiator's identity in XX). Not before: in the deferred patterns (I1X, ...) the key
        /// comes in the clear two messages before its proof, and refusing it at once would tell
        /// anyone who sends a key it does not hold whether it is trusted.
        private func checkPeer() throws {
            guard !peerChecked, let key = state.remoteStaticKey, let proof = peerKeyProof, state.messagesProcessed > proof else { return }
            peerChecked = true
            storeAfterHandshake = try trust.evaluate(key)
        }

        private func finish(context: ChannelHandlerContext) throws {
            // Only a key the peer proved it holds is the peer's (an unproven one is not reported).
            let peerKey = provesPeerKey ? state.remoteStaticKey : nil
            if !peerChecked || peerKey == nil {
                peerChecked = true
                storeAfterHandshake = try trust.evaluate(peerKey)
            }
            let transport = try state.transportState()
            var newlyTrusted = false
            if let storeAfterHandshake, let key = peerKey {
                try storeAfterHandshake.save(key)
                newlyTrusted = true
            }
            timeout?.cancel()
            firstMessageTimeout?.cancel()
            let pacing = OutboundPacing(limit: configuration.maxBufferedOutboundBytes)
            let streamEnd = StreamEnd()
            try context.pipeline.syncOperations.addHandler(
                TransportHandler(
                    transport: transport, maxMessageLength: configuration.maxMessageLength,
                    messageTimeout: configuration.messageTimeout, sendTimeout: configuration.sendTimeout, pacing: pacing,
                    streamEnd: streamEnd),
                position: .after(self))
            phase = .established
            established.succeed(
                Established(
                    peerStaticKey: peerKey, isPeerKeyNewlyTrusted: newlyTrusted, handshakeHash: transport.handshakeHash,
                    pacing: pacing, streamEnd: streamEnd))
        }

        private func fail(context: ChannelHandlerContext, error: SecureChannelError) {
            guard phase == .handshaking else { return }
            phase = .failed
            timeout?.cancel()
            firstMessageTimeout?.cancel()
            established.fail(error)
            context.close(promise: nil)
        }

        static func channelError(_ error: any Error) -> SecureChannelError {
            switch error {
            case let error as SecureChannelError: error
            case let error as NoiseError: .noise(error)
            default: .connectionClosedDuringHandshake
            }
        }
    }
}
