import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import SecureChannel
import SFTestSupport
import Testing

/// A peer that completes the handshake and then reads nothing lets the sockets' buffers fill;
/// after that the writer waits, and keepalive probes, which the peer's kernel answers, never end
/// the wait. `Configuration.sendTimeout` does, on either side, and only for a peer that takes
/// nothing: a slow reader that keeps taking is served however long it takes in all.
@Suite("SecureChannel: a peer that reads nothing of what is sent to it")
struct NonReadingPeerTests {
    typealias Fixtures = ChannelFixtures

    static let megabyte = ByteBuffer(repeating: 0x5A, count: 1 << 20)

    /// A server on loopback that accepts any client key, its configuration changed by `configure`.
    static func server(_ configure: (inout SecureChannel.Configuration) -> Void) async throws -> SecureChannel.Server {
        var configuration = SecureChannel.Configuration()
        configure(&configuration)
        return try await SecureChannel.Server.bind(
            host: "127.0.0.1", port: 0, staticKey: Fixtures.serverKey, peer: .anyAuthenticatedKey, configuration: configuration)
    }

    /// Writes megabyte messages on `connection` until a write fails, and returns its error. A
    /// backstop closes the connection after two minutes, so without a deadline the error is not
    /// `sendTimeout` and the test fails instead of hanging.
    static func writeUntilRefused(_ connection: SecureChannel.Connection) async -> (any Error)? {
        let channel = connection.channel.channel
        let backstop = Task {
            try await Task.sleep(for: .seconds(120))
            try await channel.close()
        }
        defer { backstop.cancel() }
        do {
            try await connection.executeThenClose { _, outbound in
                // Far more than the sockets can hold: the writes stop being taken long before.
                for _ in 0..<4096 { try await outbound.write(megabyte) }
            }
            return nil
        } catch {
            return error
        }
    }

    @Test("a client whose server reads nothing fails with sendTimeout instead of waiting for ever", .hangBackstop)
    func clientToANonReadingServer() async throws {
        let listener = try RawListener()
        let release = DispatchSemaphore(value: 0)
        let serving = BackgroundCall { () throws -> Bool in
            let peer = try listener.accept(readTimeout: 600)
            let defaults = SecureChannel.Configuration()
            let responder = try Noise.HandshakeState(
                protocolName: defaults.protocolName, role: .responder, prologue: defaults.prologue, staticKey: Fixtures.serverKey)
            _ = try responder.readMessage(#require(peer.receiveFrame()))
            peer.sendFrame(try responder.writeMessage())
            _ = try responder.readMessage(#require(peer.receiveFrame()))
            // Reads nothing more until the client has given up (or ten minutes pass).
            return release.wait(timeout: .now() + 600) == .success
        }
        defer { release.signal() }
        var configuration = SecureChannel.Configuration()
        configuration.sendTimeout = .seconds(1)
        let connection = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: listener.port, staticKey: Fixtures.clientKey, peer: .pinned(Fixtures.serverKey.publicKey),
            configuration: configuration)
        let error = await Self.writeUntilRefused(connection)
        #expect(error as? SecureChannelError == .sendTimeout)
        release.signal()
        #expect(try await serving.value())
    }

    @Test("a server's connection to a client that reads nothing fails with sendTimeout; the server serves on", .hangBackstop)
    func serverToANonReadingClient() async throws {
        let server = try await Self.server { $0.sendTimeout = .seconds(1) }
        defer { Task { await server.close() } }
        let port = server.port
        let release = DispatchSemaphore(value: 0)
        let peer = BackgroundCall { () throws -> Bool in
            let peer = try RawPeer(port: port, readTimeout: 600)
            _ = try peer.handshake(staticKey: Fixtures.clientKey)
            return release.wait(timeout: .now() + 600) == .success
        }
        defer { release.signal() }
        var connections = server.connections.makeAsyncIterator()
        let stalled = try #require(await connections.next())
        let error = await Self.writeUntilRefused(stalled)
        #expect(error as? SecureChannelError == .sendTimeout)
        release.signal()
        #expect(try await peer.value())

        // One connection's failure ends only that connection.
        let next = Task { try await Fixtures.echo(ByteBuffer(string: "next"), port: port) }
        let served = try #require(await connections.next())
        try await served.executeThenClose { inbound, outbound in
            for try await message in inbound { try await outbound.write(message) }
        }
        #expect(try await next.value == ByteBuffer(string: "next"))
    }

    /// A bad frame ends the connection with its reason on both sides of the application: a write
    /// after it threw `connectionClosed` ("ended without a failure of the stream") before.
    @Test("a writer learns the reason a bad frame from the peer ended the connection", .hangBackstop)
    func writerLearnsTheFramingError() async throws {
        let server = try await Self.server { $0.maxFrameLength = 1000 }
        defer { Task { await server.close() } }
        let port = server.port
        let peer = BackgroundCall { () throws -> Bool in
            let peer = try RawPeer(port: port, readTimeout: 600)
            let transport = try peer.handshake(staticKey: Fixtures.clientKey)
            guard let ready = peer.receiveFrame(), try transport.readMessage(ready) == Data([0x01]) + Data("ready".utf8) else { return false }
            peer.send(Data([0xFF, 0xFF]))
            return peer.waitForClose()
        }
        var connections = server.connections.makeAsyncIterator()
        let connection = try #require(await connections.next())
        // The body's errors, kept apart from executeThenClose's own (its end of stream, which
        // cannot be sent on a failed connection).
        let seen = NIOLockedValueBox<(inbound: (any Error)?, write: (any Error)?)>((nil, nil))
        _ = try? await connection.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: "ready"))
            do { for try await _ in inbound {} } catch { seen.withLockedValue { $0.inbound = error } }
            try? await connection.channel.channel.closeFuture.get()
            do { try await outbound.write(ByteBuffer(string: "after")) } catch { seen.withLockedValue { $0.write = error } }
        }
        let (inboundError, writeError) = seen.withLockedValue { $0 }
        #expect(inboundError as? SecureChannelError == .frameTooLarge(length: 65_535, limit: 1000))
        #expect(writeError as? SecureChannelError == .frameTooLarge(length: 65_535, limit: 1000), "\(String(describing: writeError))")
        #expect(try await peer.value())
    }

    /// Progress is counted in bytes, not in messages or in the megabyte buffers the frames are
    /// sealed into: 8 MiB read at 640 KiB/s take several deadlines in all, and bytes are taken in
    /// every one. (The sockets' buffers are
    /// fixed small, as the kernel's autotuning would otherwise let them take megabytes at a time,
    /// and opens a full window again only after much of it was read.)
    @Test("a slow reader that keeps taking is never timed out", .hangBackstop)
    func slowSteadyReader() async throws {
        // Three seconds: a reader thread held back by a loaded machine for a second or two is no stall.
        let server = try await Self.server { $0.sendTimeout = .seconds(3) }
        defer { Task { await server.close() } }
        let port = server.port
        let messageCount = 8
        let reader = BackgroundCall { () throws -> (bytes: Int, endOfStream: Bool) in
            let peer = try RawPeer(port: port, readTimeout: 600, receiveBuffer: 64 << 10)
            let transport = try peer.handshake(staticKey: Fixtures.clientKey)
            var bytes = 0
            var sinceRest = 0
            while let frame = peer.receiveFrame() {
                let plaintext = try transport.readMessage(frame)
                if plaintext == Data([0x02]) {
                    peer.sendFrame(try transport.writeMessage(Data([0x02])))
                    return (bytes, true)
                }
                bytes += plaintext.count - 1
                sinceRest += frame.count
                if sinceRest >= 64 << 10 {
                    sinceRest = 0
                    usleep(100_000)
                }
            }
            return (bytes, false)
        }
        var connections = server.connections.makeAsyncIterator()
        let connection = try #require(await connections.next())
        try await connection.channel.channel.setOption(ChannelOptions.socketOption(.so_sndbuf), value: 64 << 10).get()
        try await connection.executeThenClose { inbound, outbound in
            for _ in 0..<messageCount { try await outbound.write(Self.megabyte) }
            outbound.finish()
            for try await _ in inbound {}
        }
        let (bytes, endOfStream) = try await reader.value()
        #expect(bytes == messageCount << 20)
        #expect(endOfStream)
    }
}
