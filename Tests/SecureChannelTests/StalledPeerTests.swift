import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import SecureChannel
import SFTestSupport
import Testing

/// A peer that begins a frame or a message and stops holds its buffer (up to `maxMessageLength`)
/// for as long as the connection lives; keepalive probes, which its kernel answers, never end it.
/// `Configuration.messageTimeout` does, counted only while this side reads.
@Suite("SecureChannel: a peer that stops part-way through a frame or a message")
struct StalledPeerTests {
    typealias Fixtures = ChannelFixtures

    /// What an echo server with a one-second `messageTimeout` made of a raw client that, after the
    /// handshake, sent what `stall` sends and then nothing: whether it closed the connection, the
    /// errors its connection ended with, and the messages it received.
    static func stalled(
        _ stall: @escaping @Sendable (RawPeer, Noise.TransportState) throws -> Void
    ) async throws -> (closed: Bool, errors: [SecureChannelError], received: [ByteBuffer]) {
        var configuration = SecureChannel.Configuration()
        configuration.messageTimeout = .seconds(1)
        let echo = try await Fixtures.EchoServer(configuration: configuration)
        defer { Task { await echo.close() } }
        let port = echo.port
        let closed = try await TestSupport.onOwnThread { () throws -> Bool in
            let peer = try RawPeer(port: port, readTimeout: 300)
            try stall(peer, try peer.handshake(staticKey: Fixtures.clientKey))
            return peer.waitForClose()
        }
        await echo.waitUntil { !echo.inboundErrors.withLockedValue { $0 }.isEmpty }
        // One stalled connection ends alone: the server serves on.
        #expect(try await Fixtures.echo(ByteBuffer(string: "next"), port: port) == ByteBuffer(string: "next"))
        return (closed, echo.inboundErrors.withLockedValue { $0 }, echo.received.withLockedValue { $0 }.filter { $0 != ByteBuffer(string: "next") })
    }

    /// A server on loopback that accepts any client key, with `messageTimeout`.
    static func server(messageTimeout: TimeAmount) async throws -> SecureChannel.Server {
        var configuration = SecureChannel.Configuration()
        configuration.messageTimeout = messageTimeout
        return try await SecureChannel.Server.bind(
            host: "127.0.0.1", port: 0, staticKey: Fixtures.serverKey, peer: .anyAuthenticatedKey, configuration: configuration)
    }

    @Test("a frame begun and never finished ends the connection with messageTimeout; the server serves on", .hangBackstop)
    func unfinishedFrame() async throws {
        let (closed, errors, received) = try await Self.stalled { peer, transport in
            peer.sendFrame(try transport.writeMessage(Data([0x01]) + Data("whole".utf8)))
            // The length of a full frame, then one byte of it.
            peer.send(Data([0xFF, 0xFF, 0x00]))
        }
        #expect(closed && errors == [.messageTimeout])
        #expect(received == [ByteBuffer(string: "whole")])
    }

    @Test("a message begun (a chunk flagged 'more') and never finished ends the connection with messageTimeout", .hangBackstop)
    func unfinishedMessage() async throws {
        let (closed, errors, received) = try await Self.stalled { peer, transport in
            peer.sendFrame(try transport.writeMessage(Data([0x00]) + Data(repeating: 7, count: 60_000)))
        }
        #expect(closed && errors == [.messageTimeout])
        #expect(received.isEmpty)
    }

    /// A server's connection reads nothing until the application takes it: a peer that finished
    /// the handshake and began a frame in the same write, then stopped, was never timed out once
    /// taken (taking it restarted the socket's reads past the transport, which kept waiting).
    @Test("a connection taken after its peer stalled in the handshake's last write still times it out", .hangBackstop)
    func stalledBeforeTaken() async throws {
        let server = try await Self.server(messageTimeout: .seconds(1))
        defer { Task { await server.close() } }
        let port = server.port
        let peer = BackgroundCall { () throws -> Bool in
            let peer = try RawPeer(port: port, readTimeout: 1200)
            _ = try peer.handshake(staticKey: Fixtures.clientKey) { _ in Data([0xFF, 0xFF, 0x00]) }
            return peer.waitForClose()
        }
        var connections = server.connections.makeAsyncIterator()
        let connection = try #require(await connections.next())
        // A backstop: a connection never timed out is closed after a minute, and the test fails.
        let channel = connection.channel.channel
        let backstop = Task {
            try await Task.sleep(for: .seconds(60))
            try await channel.close()
        }
        defer { backstop.cancel() }
        await #expect(throws: SecureChannelError.messageTimeout) {
            try await connection.executeThenClose { inbound, _ in for try await _ in inbound {} }
        }
        #expect(try await peer.value())
    }

    /// The deadline is per frame, not per message: a message whose frames keep coming, each well
    /// within the deadline, arrives whole though it takes longer than the deadline in all.
    @Test("a message whose frames keep coming is delivered, however long it takes in all", .hangBackstop)
    func steadyMessage() async throws {
        var configuration = SecureChannel.Configuration()
        configuration.messageTimeout = .seconds(2)
        let echo = try await Fixtures.EchoServer(configuration: configuration)
        defer { Task { await echo.close() } }
        let port = echo.port
        let chunks = 7
        let echoed = try await TestSupport.onOwnThread { () throws -> Data in
            let peer = try RawPeer(port: port, readTimeout: 300)
            let transport = try peer.handshake(staticKey: Fixtures.clientKey)
            for index in 0..<chunks {
                // A quarter of the deadline between frames: 3 s in all, past the 2 s deadline.
                if index > 0 { usleep(500_000) }
                peer.sendFrame(try transport.writeMessage(Data([index == chunks - 1 ? 0x01 : 0x00, UInt8(index)])))
            }
            let reply = try transport.readMessage(#require(peer.receiveFrame()))
            peer.sendFrame(try transport.writeMessage(Data([0x02])))
            #expect(try peer.receiveFrame().map { try transport.readMessage($0) } == Data([0x02]), "the server's end of stream")
            return reply.dropFirst()
        }
        #expect(echoed == Data((0..<chunks).map(UInt8.init)))
        #expect(echo.inboundErrors.withLockedValue { $0 }.isEmpty)
    }

    /// The first-message deadline is the server's, for a client that connects and says nothing:
    /// a client waits for the server's answer as long as its handshake deadline allows.
    @Test("a client waits for a slow server's first message up to the handshake deadline", .hangBackstop)
    func slowServerAnswer() async throws {
        let listener = try RawListener()
        var configuration = SecureChannel.Configuration()
        configuration.firstMessageTimeout = .milliseconds(200)
        configuration.handshakeTimeout = .seconds(120)
        let serving = BackgroundCall { () throws -> Data? in
            let peer = try listener.accept(readTimeout: 1200)
            let defaults = SecureChannel.Configuration()
            let responder = try Noise.HandshakeState(
                protocolName: defaults.protocolName, role: .responder, prologue: defaults.prologue, staticKey: Fixtures.serverKey)
            _ = try responder.readMessage(#require(peer.receiveFrame()))
            usleep(1_000_000)  // five times the client's first-message deadline
            peer.sendFrame(try responder.writeMessage())
            _ = try responder.readMessage(#require(peer.receiveFrame()))
            let transport = try responder.transportState()
            peer.sendFrame(try transport.writeMessage(Data([0x01]) + Data("late".utf8)))
            peer.sendFrame(try transport.writeMessage(Data([0x02])))
            return try peer.receiveFrame().map { try transport.readMessage($0) }
        }
        let connection = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: listener.port, staticKey: Fixtures.clientKey, peer: .pinned(Fixtures.serverKey.publicKey),
            configuration: configuration)
        let received = try await connection.executeThenClose { inbound, _ in
            var messages: [ByteBuffer] = []
            for try await message in inbound { messages.append(message) }
            return messages
        }
        #expect(received == [ByteBuffer(string: "late")])
        #expect(try await serving.value() == Data([0x02]), "the client's end of stream")
    }

    /// While the application does not read, the channel stops reading the socket, here with part
    /// of a frame held: the peer cannot go on, so the time does not count against it; once the
    /// application reads again, the peer has a whole term to finish the frame.
    @Test("a reader that holds back does not time its peer out", .hangBackstop)
    func backpressureStopsTheClock() async throws {
        let server = try await Self.server(messageTimeout: .seconds(2))
        defer { Task { await server.close() } }
        let messageCount = 20  // above NIOAsyncChannel's high watermark of 10: the channel stops reading
        let port = server.port
        let peer = BackgroundCall { () throws -> Data? in
            let peer = try RawPeer(port: port, readTimeout: 1200)
            let transport = try peer.handshake(staticKey: Fixtures.clientKey)
            func framed(_ plaintext: Data) throws -> Data { RawPeer.framed(try transport.writeMessage(plaintext)) }
            var burst = Data()
            for index in 0..<messageCount { burst += try framed(Data([0x01, UInt8(index)])) }
            let last = try framed(Data([0x01]) + Data("last".utf8))
            // One write, read at once: every message, then the first three bytes of the last.
            peer.send(burst + last.prefix(3))
            guard let go = peer.receiveFrame(), try transport.readMessage(go) == Data([0x01]) + Data("go".utf8) else { return nil }
            peer.send(last.dropFirst(3))
            peer.sendFrame(try transport.writeMessage(Data([0x02])))
            return try peer.receiveFrame().map { try transport.readMessage($0) }
        }
        var connections = server.connections.makeAsyncIterator()
        let connection = try #require(await connections.next())
        let received = try await connection.executeThenClose { inbound, outbound in
            // Twice the deadline without a read.
            try await Task.sleep(for: .seconds(4))
            var received: [ByteBuffer] = []
            for try await message in inbound {
                received.append(message)
                if received.count == messageCount { try await outbound.write(ByteBuffer(string: "go")) }
            }
            return received
        }
        #expect(received == (0..<messageCount).map { ByteBuffer(bytes: [UInt8($0)]) } + [ByteBuffer(string: "last")])
        #expect(try await peer.value() == Data([0x02]), "the server's end of stream")
    }
}
