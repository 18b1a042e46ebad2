import Foundation
import NIOConcurrencyHelpers
import NIOCore
import SFTestSupport
import Testing

@testable import SecureChannel

/// The async writer is paced by the connection (loopback TCP only).
@Suite("SecureChannel writer pacing")
struct PacingTests {
    struct Corrupted: Error { let offset: Int }

    @Test("a writer faster than its reader is backpressured: at most 1 MiB waits in the process, and all 64 MiB arrive once the reader reads")
    func writerSuspendsUntilTheReaderReads() async throws {
        let limit = 1 << 20, size = 64 << 10, total = 64 << 20
        var configuration = SecureChannel.Configuration()
        configuration.maxBufferedOutboundBytes = limit
        let server = try await SecureChannel.Server.bind(
            host: "127.0.0.1", port: 0, staticKey: ChannelFixtures.serverKey, peer: .anyAuthenticatedKey, configuration: configuration)
        defer { Task { await server.close() } }
        let client = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: server.port, staticKey: ChannelFixtures.clientKey, peer: .pinned(ChannelFixtures.serverKey.publicKey),
            configuration: configuration)
        var accepted = server.connections.makeAsyncIterator()
        let reader = try #require(await accepted.next())

        // The reader reads nothing until `go` is yielded; then it checks every byte and answers.
        let (go, goContinuation) = AsyncStream.makeStream(of: Void.self)
        let readerTask = Task { () throws -> Int in
            try await reader.executeThenClose { inbound, outbound in
                for await _ in go { break }
                var received = 0
                for try await message in inbound {
                    for byte in message.readableBytesView where byte != UInt8(truncatingIfNeeded: received / size) {
                        throw Corrupted(offset: received)
                    }
                    received += message.readableBytes
                    if received >= total { break }
                }
                try await outbound.write(ByteBuffer(string: "done"))
                return received
            }
        }
        let written = NIOLockedValueBox(0)
        // On a thread of its own: a writer starved of a cooperative thread would look stalled.
        let writerTask = Task(executorPreference: QueueExecutor(width: 1, label: "PacingWriter")) { () throws -> String in
            try await client.executeThenClose { inbound, outbound in
                for index in 0..<(total / size) {
                    try await outbound.write(ByteBuffer(repeating: UInt8(truncatingIfNeeded: index), count: size))
                    written.withLockedValue { $0 += size }
                }
                var replies = inbound.makeAsyncIterator()
                return String(buffer: try #require(try await replies.next()))
            }
        }

        // Wait until the writer makes no progress for a second (the socket buffers are full).
        var last = -1
        for _ in 0..<60 {
            try await Task.sleep(for: .seconds(1))
            let now = written.withLockedValue { $0 }
            if now == last { break }
            last = now
        }
        let stalledAt = written.withLockedValue { $0 }
        #expect(stalledAt < total, "the writer wrote all \(total) bytes although nobody read them")
        // Bytes handed to the connection and not yet in the kernel never exceeded the bound.
        #expect(client.pacing.peakQueuedBytes <= limit, "peak \(client.pacing.peakQueuedBytes) bytes buffered")
        #expect(client.pacing.peakQueuedBytes > 0)

        goContinuation.yield()
        goContinuation.finish()
        #expect(try await readerTask.value == total)
        #expect(try await writerTask.value == "done")
        #expect(written.withLockedValue { $0 } == total)
        print("pacing: writer stalled at \(stalledAt >> 20) MiB of \(total >> 20) MiB (kernel socket buffers included); peak buffered in process \(client.pacing.peakQueuedBytes) bytes, bound \(limit)")
    }

    @Test("a writer waiting for room fails, with why, when the connection closes, and when its task is cancelled")
    func waitingWriterFails() async throws {
        let pacing = SecureChannel.OutboundPacing(limit: 10)
        try await pacing.reserve(8)
        // A single message larger than the bound passes when nothing is buffered.
        let large = SecureChannel.OutboundPacing(limit: 10)
        try await large.reserve(100)
        #expect(large.queuedBytes == 100)

        let blocked = Task { try await pacing.reserve(8) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(pacing.queuedBytes == 8)
        pacing.release(8)
        try await blocked.value
        #expect(pacing.queuedBytes == 8)

        let cancelled = Task { try await pacing.reserve(8) }
        try await Task.sleep(for: .milliseconds(50))
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }

        let closed = Task { try await pacing.reserve(8) }
        try await Task.sleep(for: .milliseconds(50))
        pacing.close(because: .peerUnresponsive)
        await #expect(throws: SecureChannelError.peerUnresponsive) { try await closed.value }
        // The first reason stays: it is why the connection ended.
        pacing.close(because: .connectionClosed)
        await #expect(throws: SecureChannelError.peerUnresponsive) { try await pacing.reserve(1) }
        // NIO's error for a closed channel, met by a write, means the same; other errors are themselves.
        #expect(pacing.meaning(of: ChannelError.ioOnClosedChannel) as? SecureChannelError == .peerUnresponsive)
        #expect(pacing.meaning(of: CancellationError()) is CancellationError)
    }
}
