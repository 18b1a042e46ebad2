import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import SFTestSupport
import Testing

@testable import SecureChannel

/// What a server holds for connections it has not handed out, and what its close ends
/// (loopback TCP only).
@Suite("SecureChannel server: waiting connections and close")
struct ServerLifecycleTests {
    @Test("a connection nobody has taken reads nothing from its peer (its messages wait in the kernel's buffers, not in the process) and reads everything once taken")
    func aConnectionNotYetTakenReadsNothing() async throws {
        let size = 4 << 20, count = 16, total = size * count
        let server = try await SecureChannel.Server.bind(
            host: "127.0.0.1", port: 0, staticKey: ChannelFixtures.serverKey, peer: .anyAuthenticatedKey)
        defer { Task { await server.close() } }
        let client = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: server.port, staticKey: ChannelFixtures.clientKey, peer: .pinned(ChannelFixtures.serverKey.publicKey))
        let written = NIOLockedValueBox(0)
        // On a thread of its own: a writer starved of a cooperative thread would look stalled.
        let writer = Task(executorPreference: QueueExecutor(width: 1, label: "UntakenWriter")) {
            try await client.executeThenClose { inbound, outbound in
                for index in 0..<count {
                    try await outbound.write(ByteBuffer(repeating: UInt8(index), count: size))
                    written.withLockedValue { $0 += size }
                }
                outbound.finish()
                for try await _ in inbound {}
            }
        }

        // Wait until the writer makes no progress for three seconds: every buffer on the way is full.
        var last = -1, unchanged = 0
        for _ in 0..<240 where unchanged < 6 {
            try await Task.sleep(for: .milliseconds(500))
            let now = written.withLockedValue { $0 }
            unchanged = now == last ? unchanged + 1 : 0
            last = now
        }
        let stalledAt = written.withLockedValue { $0 }
        // A connection that read would take ten messages (40 MiB) into its inbound buffer before
        // pausing; one that reads nothing holds the socket buffers' few MiB, plus the message
        // being written and the one the pacing lets through.
        #expect(stalledAt <= 32 << 20, "the peer wrote \(stalledAt >> 20) MiB to a connection nobody took")

        var accepted = server.connections.makeAsyncIterator()
        let connection = try #require(await accepted.next())
        let received = try await connection.executeThenClose { inbound, _ in
            var received = 0
            for try await message in inbound {
                let index = UInt8(truncatingIfNeeded: received / size)
                #expect(message.readableBytesView.first == index && message.readableBytesView.last == index)
                received += message.readableBytes
            }
            return received
        }
        #expect(received == total)
        try await writer.value
        print("server: a peer stalled after \(stalledAt >> 20) MiB written to a connection nobody took; \(received >> 20) MiB read once taken")
    }

    @Test("close() closes the handshakes in progress and the connections not taken (not reported as failures), keeps the taken ones open, and ends connections")
    func closeEndsWhatTheServerHolds() async throws {
        var configuration = SecureChannel.Configuration()
        // Long enough that only the close can end the idle handshake below, however long the
        // test's task waits for a cooperative thread before it closes.
        configuration.firstMessageTimeout = .seconds(3600)
        configuration.handshakeTimeout = .seconds(3600)
        let failures = NIOLockedValueBox([SecureChannelError]())
        let server = try await SecureChannel.Server.bind(
            host: "127.0.0.1", port: 0, staticKey: ChannelFixtures.serverKey, peer: .anyAuthenticatedKey, configuration: configuration
        ) { error in failures.withLockedValue { $0.append(error) } }
        let connect = {
            try await SecureChannel.Client.connect(
                host: "127.0.0.1", port: server.port, staticKey: ChannelFixtures.clientKey,
                peer: .pinned(ChannelFixtures.serverKey.publicKey), configuration: configuration)
        }

        // Taken, and served by an echo loop.
        let taken = try await connect()
        var accepted = server.connections.makeAsyncIterator()
        let served = try #require(await accepted.next())
        // On a thread of its own, as `EchoServer`'s: a task starved past the minute the client's
        // closed socket lingers would find the connection reset by its keepalive probe, and could
        // no longer write its end of stream.
        let echo = Task(executorPreference: QueueExecutor(width: 1, label: "ServerLifecycleTests.echo")) {
            try await served.executeThenClose { inbound, outbound in
                for try await message in inbound { try await outbound.write(message) }
            }
        }
        // Authenticated, never taken (the server has read its last handshake message once no
        // handshake is in progress).
        let notTaken = try await connect()
        for _ in 0..<6000 where server.handshakesInProgress > 0 { try await Task.sleep(for: .milliseconds(10)) }
        // A handshake in progress: connected, nothing sent.
        let idle = try RawPeer(port: server.port, readTimeout: 30)
        for _ in 0..<6000 where server.handshakesInProgress == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.handshakesInProgress == 1)

        await server.close()

        #expect(try await TestSupport.onOwnThread { idle.waitForClose() }, "the handshake in progress was left open")
        // Its peer learns the close (a deadline ends the wait if it never does).
        let timedOut = NIOLockedValueBox(false)
        let watchdog = Task {
            try await Task.sleep(for: .seconds(900))
            timedOut.withLockedValue { $0 = true }
            notTaken.channel.channel.close(promise: nil)
        }
        await #expect(throws: SecureChannelError.closedBeforeEndOfStream) {
            try await notTaken.executeThenClose { inbound, _ in for try await _ in inbound {} }
        }
        watchdog.cancel()
        #expect(!timedOut.withLockedValue { $0 }, "the connection not taken was left open")
        #expect(await accepted.next() == nil, "connections handed out a connection after the close")
        let reply = try await taken.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: "still open"))
            var replies = inbound.makeAsyncIterator()
            return try await replies.next()
        }
        #expect(reply == ByteBuffer(string: "still open"))
        try await echo.value
        #expect(failures.withLockedValue { $0 }.isEmpty, "\(failures.withLockedValue { $0 })")
    }
}

/// A static key is the peer's only once the peer proved it holds it (a payload it sent under a key
/// mixed from a DH with it). The responder of IX reads the initiator's static key in the clear in
/// the first message and never reads another: anyone could send a trusted public key there.
@Suite("SecureChannel: a peer's static key counts only once proven")
struct PeerKeyProofTests {
    @Test("which side of which pattern sees the peer prove its static key")
    func provenByPattern() throws {
        let cases: [(String, initiator: Bool, responder: Bool)] = [
            ("XX", true, true), ("IK", true, true), ("KK", true, true), ("XK", true, true), ("IX", true, false), ("IN", false, false),
            ("NN", false, false), ("NK", true, false), ("NX", true, false), ("KK1", true, false), ("XX1", false, true), ("NX1", false, false),
            ("X1X", true, false), ("N", false, false), ("K", false, true), ("X", false, true), ("XXpsk3", true, true),
        ]
        for (name, initiator, responder) in cases {
            let pattern = try Noise.HandshakePattern(named: name)
            #expect(pattern.provesPeerStaticKey(to: .initiator) == initiator, "\(name), initiator")
            #expect(pattern.provesPeerStaticKey(to: .responder) == responder, "\(name), responder")
        }
    }

    @Test("the message that proves the peer's static key: the first from it at or after a DH with that key")
    func messageProvingThePeerKey() throws {
        let cases: [(String, Int?, Int?)] = [
            ("XX", 1, 2), ("IK", 1, 0), ("I1X", 1, 2), ("IX1", nil, 2), ("I1X1", nil, 2), ("IX", 1, nil), ("KK", 1, 0), ("NN", nil, nil),
        ]
        for (name, initiator, responder) in cases {
            let pattern = try Noise.HandshakePattern(named: name)
            #expect(pattern.messageProvingPeerStaticKey(to: .initiator) == initiator, "\(name), initiator")
            #expect(pattern.messageProvingPeerStaticKey(to: .responder) == responder, "\(name), responder")
        }
    }

    /// In I1X the client's static key comes in the clear in the first message and is proven in
    /// the third. The server refused an untrusted key as soon as the first came, so anyone could
    /// learn whether a key it does not hold is trusted; it now goes on to the proof, and refuses
    /// the key then.
    @Test("a deferred pattern's claimed key is judged only once proven: no answer tells whether a key is trusted")
    func aClaimedKeyIsJudgedOnceProven() async throws {
        var configuration = SecureChannel.Configuration()
        configuration.protocolName = try Noise.ProtocolName(parsing: "Noise_I1X_25519_ChaChaPoly_SHA256")
        // The server trusts another key than the one the client claims.
        let echo = try await ChannelFixtures.EchoServer(configuration: configuration, peer: .pinned(Curve25519.KeyAgreement.PrivateKey().publicKey))
        defer { Task { await echo.close() } }
        let (port, protocolName, prologue) = (echo.port, configuration.protocolName, configuration.prologue)
        let (answered, closedAfterProof) = try await TestSupport.onOwnThread { () throws -> (Bool, Bool) in
            let peer = try RawPeer(port: port, readTimeout: 300)
            let initiator = try Noise.HandshakeState(
                protocolName: protocolName, role: .initiator, prologue: prologue, staticKey: ChannelFixtures.clientKey)
            peer.sendFrame(try initiator.writeMessage())
            // The server answers the claim as it would any: the key is not judged yet.
            guard let second = peer.receiveFrame() else { return (false, false) }
            _ = try initiator.readMessage(second)
            peer.sendFrame(try initiator.writeMessage())
            return (true, peer.waitForClose())
        }
        #expect(answered, "the server ended the handshake on the unproven key")
        #expect(closedAfterProof)
        await echo.waitUntil { !echo.failures.withLockedValue { $0.isEmpty } }
        guard case .peerKeyMismatch? = echo.failures.withLockedValue({ $0.first }) else {
            Issue.record("expected peerKeyMismatch, got \(echo.failures.withLockedValue { $0 })")
            return
        }
    }

    /// The responder of a one-way pattern adds nothing fresh to the handshake: a recorded
    /// session would replay in full to it (and it could not send its own end of stream).
    @Test("one-way patterns (N, K, X) are refused on both sides, whatever the policy")
    func oneWayPatternsAreRefused() async throws {
        for name in ["N", "K", "X"] {
            var configuration = SecureChannel.Configuration()
            configuration.protocolName = try Noise.ProtocolName(parsing: "Noise_\(name)_25519_ChaChaPoly_SHA256")
            for peer in [SecureChannel.PeerTrust.pinned(ChannelFixtures.clientKey.publicKey), .anyAuthenticatedKey, .anonymous] {
                await #expect(throws: SecureChannelError.oneWayPattern, "\(name), server") {
                    _ = try await SecureChannel.Server.bind(
                        host: "127.0.0.1", port: 0, staticKey: ChannelFixtures.serverKey, peer: peer, configuration: configuration)
                }
            }
            for peer in [SecureChannel.PeerTrust.pinned(ChannelFixtures.serverKey.publicKey), .anonymous] {
                await #expect(throws: SecureChannelError.oneWayPattern, "\(name), client") {
                    _ = try await SecureChannel.Client.connect(
                        host: "127.0.0.1", port: 9, staticKey: ChannelFixtures.clientKey, peer: peer, configuration: configuration)
                }
            }
        }
    }

    @Test("a policy that trusts a key is refused for a pattern that never proves it; anonymous, the unproven key is not reported")
    func unprovenKeysAreNotTheirHolders() async throws {
        var ix = SecureChannel.Configuration()
        ix.protocolName = try Noise.ProtocolName(parsing: "Noise_IX_25519_ChaChaPoly_SHA256")
        for peer in [SecureChannel.PeerTrust.pinned(ChannelFixtures.clientKey.publicKey), .anyAuthenticatedKey] {
            await #expect(throws: SecureChannelError.peerNotAuthenticated) {
                _ = try await SecureChannel.Server.bind(host: "127.0.0.1", port: 0, staticKey: ChannelFixtures.serverKey, peer: peer, configuration: ix)
            }
        }
        // The initiator of XX1 reads the responder's key in the clear and never a payload under it.
        var xx1 = SecureChannel.Configuration()
        xx1.protocolName = try Noise.ProtocolName(parsing: "Noise_XX1_25519_ChaChaPoly_SHA256")
        await #expect(throws: SecureChannelError.peerNotAuthenticated) {
            _ = try await SecureChannel.Client.connect(
                host: "127.0.0.1", port: 9, staticKey: ChannelFixtures.clientKey, peer: .pinned(ChannelFixtures.serverKey.publicKey), configuration: xx1)
        }
        // An anonymous IX server: a raw peer sends a random ephemeral key and the client's public
        // key (in the clear, as IX's first message holds them); the connection it gets names no key.
        let server = try await SecureChannel.Server.bind(host: "127.0.0.1", port: 0, staticKey: ChannelFixtures.serverKey, peer: .anonymous, configuration: ix)
        defer { Task { await server.close() } }
        let peer = try RawPeer(port: server.port)
        peer.sendFrame(Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation + ChannelFixtures.clientKey.publicKey.rawRepresentation)
        #expect(peer.receiveFrame() != nil, "no second handshake message")
        var connections = server.connections.makeAsyncIterator()
        let connection = try #require(await connections.next())
        #expect(connection.peerStaticKey == nil && connection.peerFingerprint == nil, "an unproven key was reported as the peer's")
    }
}
