import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
@testable import SecureChannel
import SFTestSupport
import Testing

/// Issue 21: the authenticated end of stream. A stream is complete only when the peer's
/// end-of-stream message arrived; `finish()` half-closes and reading goes on; a connection that
/// ends without the end of stream (a body that throws, a relay that cuts the TCP connection) is
/// `closedBeforeEndOfStream`, never a clean end.
// The limit is a generous multiple of the few seconds these take alone: the whole suite on two
// cores can starve one test for minutes.
@Suite(.hangBackstop) struct EndOfStreamTests {
    typealias Fixtures = ChannelFixtures

    /// 3 MB in 48 messages of 65,536 bytes less one, byte i of message m being (i + 31 m) mod 251.
    static let messages = (0..<48).map { m in ByteBuffer(bytes: (0..<65_535).map { UInt8((($0 + 31 * m) % 251)) }) }

    /// A server running `handle` on its first connection; its result or error is `outcome`.
    final class OneConnectionServer: Sendable {
        let server: SecureChannel.Server
        let outcome = NIOLockedValueBox<Result<[ByteBuffer], any Error>?>(nil)

        init(_ handle: @escaping @Sendable (SecureChannel.Connection) async throws -> [ByteBuffer]) async throws {
            // Its end of stream may wait for the test's own task to read 3 MB first, and that task
            // may wait minutes for a cooperative thread: a close deadline of 15 minutes, not 10 s.
            var configuration = SecureChannel.Configuration()
            configuration.closeTimeout = .seconds(900)
            server = try await SecureChannel.Server.bind(
                host: "127.0.0.1", port: 0, staticKey: Fixtures.serverKey, peer: .anyAuthenticatedKey, configuration: configuration)
            let (server, outcome) = (server, outcome)
            // On a thread of its own, as the echo server's (see `ChannelFixtures.EchoServer`).
            Task(executorPreference: QueueExecutor(width: 1, label: "OneConnectionServer")) {
                for await connection in server.connections {
                    let result: Result<[ByteBuffer], any Error>
                    do { result = .success(try await handle(connection)) } catch { result = .failure(error) }
                    outcome.withLockedValue { $0 = result }
                    break
                }
            }
        }

        func connect() async throws -> SecureChannel.Connection {
            try await SecureChannel.Client.connect(
                host: "127.0.0.1", port: server.port, staticKey: Fixtures.clientKey, peer: .pinned(Fixtures.serverKey.publicKey))
        }

        /// Waits (events, at most 30 s) for the handler's outcome.
        func result() async -> Result<[ByteBuffer], any Error>? {
            for _ in 0..<3000 {
                if let result = outcome.withLockedValue({ $0 }) { return result }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return nil
        }
    }

    /// Everything the peer sends, until its end of stream.
    static func readAll(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>) async throws -> [ByteBuffer] {
        var received = [ByteBuffer]()
        for try await message in inbound { received.append(message) }
        return received
    }

    @Test("finish() half-closes: the server reads to our end of stream, then its 3 MB reply still arrives whole")
    func finishHalfClosesAndTheReplyArrives() async throws {
        let server = try await OneConnectionServer { connection in
            try await connection.executeThenClose { inbound, outbound in
                let received = try await Self.readAll(inbound)
                for message in Self.messages { try await outbound.write(message) }
                return received
            }
        }
        let connection = try await server.connect()
        let replies = try await connection.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: "request"))
            outbound.finish()
            await #expect(throws: (any Error).self, "writing after finish() fails") {
                try await outbound.write(ByteBuffer(string: "late"))
            }
            return try await Self.readAll(inbound)
        }
        #expect(replies == Self.messages)
        let received = try #require(await server.result()).get()
        #expect(received == [ByteBuffer(string: "request")], "the late write never arrived")
    }

    @Test("both directions at once, 3 MB each: each side gets everything, then the other's end of stream")
    func bothDirectionsAtOnce() async throws {
        @Sendable func exchange(_ connection: SecureChannel.Connection) async throws -> [ByteBuffer] {
            try await connection.executeThenClose { inbound, outbound in
                async let received = Self.readAll(inbound)
                for message in Self.messages { try await outbound.write(message) }
                outbound.finish()
                return try await received
            }
        }
        let server = try await OneConnectionServer(exchange)
        let clientReceived = try await exchange(try await server.connect())
        #expect(clientReceived == Self.messages)
        #expect(try #require(await server.result()).get() == Self.messages)
    }

    @Test("a peer that sends nothing: its end of stream alone, zero messages, no error")
    func aPeerThatSendsNothing() async throws {
        let server = try await OneConnectionServer { connection in
            try await connection.executeThenClose { inbound, _ in try await Self.readAll(inbound) }
        }
        let received = try await (try await server.connect()).executeThenClose { inbound, outbound in
            outbound.finish()
            return try await Self.readAll(inbound)
        }
        #expect(received.isEmpty)
        #expect(try #require(await server.result()).get().isEmpty)
    }

    /// A peer that sends its reply and end of stream and closes the whole connection at once
    /// (NIO's own `executeThenClose` does) while we still work: our end of stream can no longer be
    /// written, and `executeThenClose` says so with a `SecureChannelError`, not NIO's "I/O on
    /// closed channel"; so does a write once the connection has closed (`connectionClosed`: the
    /// stream itself did not fail). What the peer sent still arrived whole.
    @Test("a peer that closes after its end of stream, before ours is written: endOfStreamNotSent, its reply whole")
    func aPeerThatClosesBeforeOurEndOfStream() async throws {
        let server = try await OneConnectionServer { connection in
            try await connection.channel.executeThenClose { _, outbound in
                try await outbound.write(ByteBuffer(string: "reply"))
                return []
            }
        }
        let connection = try await server.connect()
        let received = NIOLockedValueBox([ByteBuffer]())
        await #expect(throws: SecureChannelError.endOfStreamNotSent) {
            try await connection.executeThenClose { inbound, outbound in
                for try await message in inbound { received.withLockedValue { $0.append(message) } }
                // Once the peer's process has closed its socket, the next bytes we send draw a
                // reset from its system, and the reset closes our channel. The closed socket
                // lingers for at most a minute (Linux's tcp_fin_timeout), answering keepalive
                // probes; after it, the first probe (at a minute of silence) draws the reset. So a
                // test task starved that long finds the channel closed already, and the write
                // fails as a write on a closed connection does; either way our end of stream
                // can no longer be written.
                try #require(await server.result() != nil, "the server did not finish")
                do {
                    try await outbound.write(ByteBuffer(string: "late"))
                } catch SecureChannelError.connectionClosed {}
                try await connection.channel.channel.closeFuture.get()
                do {
                    try await outbound.write(ByteBuffer(string: "later"))
                    Issue.record("a write on the closed connection succeeded")
                } catch SecureChannelError.connectionClosed {}
            }
        }
        #expect(received.withLockedValue { $0 } == [ByteBuffer(string: "reply")])
    }

    struct Abandoned: Error {}

    /// The connection ended because the peer cut its stream: a later write throws that reason,
    /// the same error the inbound sequence threw, not NIO's "I/O on closed channel".
    @Test("a write after the peer cut the stream throws why the connection ended: closedBeforeEndOfStream")
    func aWriteAfterACutStreamSaysWhy() async throws {
        let server = try await OneConnectionServer { connection in
            try await connection.executeThenClose { _, outbound in
                try await outbound.write(ByteBuffer(string: "reply"))
                throw Abandoned()
            }
        }
        let connection = try await server.connect()
        let readFailure = NIOLockedValueBox<(any Error)?>(nil)
        await #expect(throws: SecureChannelError.closedBeforeEndOfStream) {
            try await connection.executeThenClose { inbound, outbound in
                do {
                    for try await _ in inbound {}
                } catch {
                    readFailure.withLockedValue { $0 = error }
                }
                // The failure closes the channel; the write comes after it, from the writer's state.
                try await connection.channel.channel.closeFuture.get()
                try await outbound.write(ByteBuffer(string: "late"))
            }
        }
        #expect(readFailure.withLockedValue { $0 } as? SecureChannelError == .closedBeforeEndOfStream)
    }

    @Test("a body that throws closes without the end of stream: the peer gets what was sent, then closedBeforeEndOfStream")
    func aFailedSenderIsACutStream() async throws {
        let server = try await OneConnectionServer { connection in
            try await connection.executeThenClose { _, outbound in
                for message in Self.messages.prefix(3) { try await outbound.write(message) }
                throw Abandoned()
            }
        }
        let received = NIOLockedValueBox([ByteBuffer]())
        let connection = try await server.connect()
        await #expect(throws: SecureChannelError.closedBeforeEndOfStream) {
            try await connection.executeThenClose { inbound, _ in
                for try await message in inbound { received.withLockedValue { $0.append(message) } }
            }
        }
        #expect(received.withLockedValue { $0 } == Array(Self.messages.prefix(3)))
        let outcome = try #require(await server.result())
        #expect(throws: Abandoned.self) { try outcome.get() }
    }

    /// A relay holding no keys forwards the server's first `cut` bytes and then closes both TCP
    /// connections cleanly (FIN), for every cut inside and between the frames of a transfer: the
    /// client never ends without an error, and never receives more than the server sent.
    /// The same relay ending with a reset (RST) instead of FIN: the stream was cut, and says so
    /// (`closedBeforeEndOfStream`, not the socket's "connection reset by peer"). A reset can take
    /// with it bytes the client had not read yet, even the end of the handshake.
    @Test("a relay that cuts the TCP stream anywhere: closedBeforeEndOfStream or a truncated frame, never a clean end",
          arguments: [TruncatingRelay.Ending.close, .reset])
    func aRelayThatTruncates(ending: TruncatingRelay.Ending) async throws {
        let payload = Array(Self.messages.prefix(2))  // two messages: 2 × 2 frames, then the end of stream
        let framed = payload.reduce(0) { $0 + SecureChannel.ApplicationFraming.framedByteCount(forLength: $1.readableBytes) }
        let handshakeBytes = 2 + 32 + 48 + 16  // XX: the responder's one message (e, encrypted s, empty payload's tag), framed
        // Cuts at the first frame's header, inside it, at the end of each frame, and just before the end of stream.
        let frameBytes = SecureChannel.FrameEncoder.maxFrameByteCount
        for cut in [0, 1, 2, 100, frameBytes - 1, frameBytes, frameBytes + 1, 2 * frameBytes, framed - 1, framed] {
            let server = try await OneConnectionServer { connection in
                try await connection.executeThenClose { inbound, outbound in
                    for message in payload { try await outbound.write(message) }
                    outbound.finish()
                    return try await Self.readAll(inbound)
                }
            }
            let relay = try await TruncatingRelay.start(target: server.server.port, serverBytes: handshakeBytes + cut, ending: ending)
            let received = NIOLockedValueBox(0)
            do {
                let connection: SecureChannel.Connection
                do {
                    connection = try await SecureChannel.Client.connect(
                        host: "127.0.0.1", port: relay.port, staticKey: Fixtures.clientKey, peer: .pinned(Fixtures.serverKey.publicKey))
                } catch SecureChannelError.connectionClosedDuringHandshake where ending == .reset {
                    await relay.stop()
                    await server.server.close()
                    continue
                }
                try await connection.executeThenClose { inbound, _ in
                    for try await message in inbound { received.withLockedValue { $0 += message.readableBytes } }
                }
                Issue.record("cut at \(cut): the stream ended cleanly with \(received.withLockedValue { $0 }) bytes")
            } catch let error as SecureChannelError {
                #expect(error == .closedBeforeEndOfStream || error == .truncatedFrame, "cut at \(cut): \(error)")
            } catch {
                Issue.record("cut at \(cut), \(ending): not a SecureChannelError: \(error)")
            }
            #expect(received.withLockedValue { $0 } <= payload.reduce(0) { $0 + $1.readableBytes })
            await relay.stop()
            await server.server.close()
        }
    }

    @Test("the end of stream: only 0x02 alone, between messages; nothing after it")
    func endOfStreamFraming() throws {
        var reassembler = SecureChannel.ApplicationFraming.Reassembler(limit: 1 << 20)
        let allocator = ByteBufferAllocator()
        guard case .endOfStream? = try reassembler.append(Data([0x02]), allocator: allocator) else {
            Issue.record("0x02 alone is the end of stream")
            return
        }
        #expect(throws: SecureChannelError.malformedApplicationFrame) { try reassembler.append(Data([0x02, 0x41]), allocator: allocator) }
        _ = try reassembler.append(Data([0x00, 0x41]), allocator: allocator)  // a message begun
        #expect(throws: SecureChannelError.malformedApplicationFrame) { try reassembler.append(Data([0x02]), allocator: allocator) }
        #expect(throws: SecureChannelError.malformedApplicationFrame) { try reassembler.append(Data([0x03]), allocator: allocator) }
    }
}

/// A TCP relay on 127.0.0.1 that holds no keys: it forwards the client's bytes to `target` and
/// the first `serverBytes` of the server's bytes back, then closes both connections.
final class TruncatingRelay: Sendable {
    /// How the relay ends the client's connection.
    enum Ending: Sendable, CustomStringConvertible {
        /// Shut down, then closed: the client reads the end of the TCP stream (FIN).
        case close
        /// Closed with a zero linger time: the client's socket is reset (RST).
        case reset

        var description: String { self == .close ? "FIN" : "RST" }
    }

    let listener: Int32
    let port: Int

    private init(listener: Int32, port: Int) {
        self.listener = listener
        self.port = port
    }

    static func start(target: Int, serverBytes: Int, ending: Ending = .close) async throws -> TruncatingRelay {
        let (listener, port) = try TestSupport.loopbackSocket(listening: true, port: 0)
        let relay = TruncatingRelay(listener: listener, port: port)
        Thread {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var serverAddress = sockaddr_in()
            serverAddress.sin_family = sa_family_t(AF_INET)
            serverAddress.sin_addr.s_addr = inet_addr("127.0.0.1")
            serverAddress.sin_port = UInt16(target).bigEndian
            _ = withUnsafePointer(to: &serverAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            // Client to server: everything, on a thread of its own, until either side closes.
            Thread { TruncatingRelay.pump(from: client, to: server, limit: .max) }.start()
            TruncatingRelay.pump(from: server, to: client, limit: serverBytes)
            if ending == .reset {
                var immediately = linger(l_onoff: 1, l_linger: 0)
                _ = setsockopt(client, SOL_SOCKET, SO_LINGER, &immediately, socklen_t(MemoryLayout<linger>.size))
                // Wakes the pump blocked reading the client (it sends nothing): a socket is
                // released, and reset, only when no call is still using it.
                shutdown(client, Int32(SHUT_RD))
            } else {
                shutdown(client, Int32(SHUT_RDWR))
            }
            shutdown(server, Int32(SHUT_RDWR))
            _ = Glibc.close(client)
            _ = Glibc.close(server)
        }.start()
        return relay
    }

    static func pump(from source: Int32, to destination: Int32, limit: Int) {
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var forwarded = 0
        while forwarded < limit {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, min($0.count, limit - forwarded)) }
            guard count > 0 else { return }
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes { write(destination, $0.baseAddress! + sent, count - sent) }
                guard written > 0 else { return }
                sent += written
            }
            forwarded += count
        }
    }

    func stop() async {
        shutdown(listener, Int32(SHUT_RDWR))
        _ = Glibc.close(listener)
    }
}
