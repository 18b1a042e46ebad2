import Foundation
import NIOConcurrencyHelpers
import NIOCore
@testable import SecureChannel
import SFTestSupport
import Testing

/// TCP keepalive is set on both ends' sockets as configured, so a peer that vanishes without
/// closing ends the connection (`peerUnresponsive`) instead of holding it forever. What the kernel
/// then does is tested end to end by `sf channel` in network namespaces (SFCLITests,
/// "a peer that vanishes").
@Suite(.hangBackstop) struct KeepaliveTests {
    typealias Fixtures = ChannelFixtures

    /// Whether SO_KEEPALIVE is on (1; Darwin reports the flag's bit), then (on Linux)
    /// TCP_KEEPIDLE, TCP_KEEPINTVL and TCP_KEEPCNT, and TCP_USER_TIMEOUT, which stays unset (0):
    /// it would end connections to live peers that keep their receive window shut.
    static func keepaliveOptions(of channel: any Channel) async throws -> [Int] {
        var options = [try await channel.getOption(.socketOption(.so_keepalive)).get() != 0 ? 1 : 0]
        #if os(Linux)
        for name in [TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT, Int32(TCP_USER_TIMEOUT)] {
            options.append(Int(try await channel.getOption(.tcpOption(.init(rawValue: name))).get()))
        }
        #endif
        return options
    }

    /// Both ends' options for a connection made with `keepalive`.
    static func optionsOfBothEnds(keepalive: SecureChannel.Keepalive?) async throws -> (client: [Int], server: [Int]) {
        let configuration = SecureChannel.Configuration(keepalive: keepalive)
        let server = try await SecureChannel.Server.bind(
            host: "127.0.0.1", port: 0, staticKey: Fixtures.serverKey, peer: .anyAuthenticatedKey, configuration: configuration)
        let serverOptions = NIOLockedValueBox<Result<[Int], any Error>?>(nil)
        Task(executorPreference: QueueExecutor(width: 1, label: "KeepaliveTests")) {
            for await connection in server.connections {
                let result: Result<[Int], any Error>
                do { result = .success(try await keepaliveOptions(of: connection.channel.channel)) } catch { result = .failure(error) }
                serverOptions.withLockedValue { $0 = result }
                // Open until the client has read its own options and closes: a close here could
                // otherwise reach a slow client before it reads them (I/O on closed channel).
                try? await connection.executeThenClose { inbound, _ in for try await _ in inbound {} }
                break
            }
        }
        let connection = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: server.port, staticKey: Fixtures.clientKey, peer: .pinned(Fixtures.serverKey.publicKey),
            configuration: configuration)
        let clientOptions = try await keepaliveOptions(of: connection.channel.channel)
        // Open until the server has read its options (likewise).
        for _ in 0..<30_000 where serverOptions.withLockedValue({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
        try? await connection.executeThenClose { _, _ in }
        await server.close()
        return (clientOptions, try #require(serverOptions.withLockedValue { $0 }).get())
    }

    @Test("the configured keepalive is on both ends' sockets; whole seconds, rounded up; nil leaves it off")
    func socketOptions() async throws {
        let keepalive = SecureChannel.Keepalive(idle: .milliseconds(6_500), interval: .seconds(3), probes: 4)
        #expect(keepalive.deadline == .seconds(19))  // 7 + 3 × 4
        var expected = [1]
        #if os(Linux)
        expected += [7, 3, 4, 0]
        #endif
        let on = try await Self.optionsOfBothEnds(keepalive: keepalive)
        #expect(on.client == expected && on.server == expected, "\(on)")
        let off = try await Self.optionsOfBothEnds(keepalive: nil)
        #expect(off.client.first == 0 && off.server.first == 0, "\(off)")
        // The default: probes after 60 s, every 10 s, 6 of them.
        #expect(SecureChannel.Configuration().keepalive == SecureChannel.Keepalive(idle: .seconds(60), interval: .seconds(10), probes: 6))
        #expect(SecureChannel.Configuration().keepalive?.deadline == .seconds(120))
    }
}
