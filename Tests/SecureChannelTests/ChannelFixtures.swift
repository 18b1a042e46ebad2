import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import SecureChannel
import SFTestSupport

/// Keys and a running echo server for the channel tests (127.0.0.1 only).
enum ChannelFixtures {
    static let serverKey = Curve25519.KeyAgreement.PrivateKey()
    static let clientKey = Curve25519.KeyAgreement.PrivateKey()

    /// A server on an ephemeral loopback port that echoes every message, recording the peers it
    /// accepted and the failures it saw. It takes and serves its connections on threads of its
    /// own (`QueueExecutor`), not on Swift's cooperative threads, which the synchronous tests of
    /// other suites may hold blocked for minutes: a connection reads nothing until it is taken,
    /// so a starved accept loop would leave a peer's bad frame unread.
    final class EchoServer: Sendable {
        let server: SecureChannel.Server
        let failures = NIOLockedValueBox([SecureChannelError]())
        let received = NIOLockedValueBox([ByteBuffer]())
        let inboundErrors = NIOLockedValueBox([SecureChannelError]())
        let accepted = NIOLockedValueBox(0)
        let taskErrors = NIOLockedValueBox(0)

        init(configuration: SecureChannel.Configuration = .init(), peer: SecureChannel.PeerTrust = .anyAuthenticatedKey) async throws {
            let failures = self.failures
            server = try await SecureChannel.Server.bind(
                host: "127.0.0.1", port: 0, staticKey: ChannelFixtures.serverKey, peer: peer, configuration: configuration
            ) { error in failures.withLockedValue { $0.append(error) } }
            let (server, received, inboundErrors, accepted, taskErrors) = (server, received, inboundErrors, accepted, taskErrors)
            let executor = QueueExecutor(width: 2, label: "EchoServer")
            Task(executorPreference: executor) {
                for await connection in server.connections {
                    accepted.withLockedValue { $0 += 1 }
                    Task(executorPreference: executor) {
                        do {
                            try await connection.executeThenClose { inbound, outbound in
                                var echoing = true
                                for try await message in inbound {
                                    received.withLockedValue { $0.append(message) }
                                    // An echo that fails (the connection closed under it, say at
                                    // a deadline) does not end the loop: the inbound sequence's
                                    // error says why the connection ended, and the tests read it.
                                    guard echoing else { continue }
                                    do { try await outbound.write(message) } catch { echoing = false }
                                }
                            }
                        } catch let error as SecureChannelError {
                            inboundErrors.withLockedValue { $0.append(error) }
                            taskErrors.withLockedValue { $0 += 1 }
                        } catch {
                            taskErrors.withLockedValue { $0 += 1 }
                        }
                    }
                }
            }
        }

        var port: Int { server.port }

        func close() async { await server.close() }

        /// Waits (without any timing assertion) until `condition` holds, for at most 20 seconds.
        func waitUntil(_ condition: @Sendable () -> Bool) async {
            for _ in 0..<2000 where !condition() { try? await Task.sleep(for: .milliseconds(10)) }
        }
    }

    /// Connects as a well-behaved client and checks one echo round trip.
    static func echo(_ message: ByteBuffer, port: Int, configuration: SecureChannel.Configuration = .init()) async throws
        -> ByteBuffer?
    {
        let connection = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: port, staticKey: clientKey, peer: .pinned(serverKey.publicKey),
            configuration: configuration)
        return try await connection.executeThenClose { inbound, outbound in
            try await outbound.write(message)
            var iterator = inbound.makeAsyncIterator()
            return try await iterator.next()
        }
    }
}
