import NIOCore
import NIOEmbedded
import Testing

@testable import SecureRecordsPostgres

/// The hold on its own, in an embedded channel: what reaches postgres-nio (the next handler) and
/// when, however the server's bytes are split.
@Suite struct CopyResponseHoldTests {
    /// A message of the backend or frontend protocol: type, length (counting itself), body.
    static func message(_ type: Character, _ body: [UInt8] = []) -> [UInt8] {
        let length = UInt32(4 + body.count)
        return [type.asciiValue!, UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + body
    }

    static let copyIn = message("G", [1, 0, 0])
    static let ready = message("Z", [UInt8(ascii: "I")])

    /// Everything the channel passed on inbound so far, joined.
    static func passed(_ channel: EmbeddedChannel) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while let buffer = try channel.readInbound(as: ByteBuffer.self) { bytes += buffer.readableBytesView }
        return bytes
    }

    @Test("what the server sends after its CopyInResponse waits for the client's CopyDone, however the bytes are split")
    func heldUntilTheCopyEnds() throws {
        let before = Self.message("S", Array("a\0b\0".utf8)) + Self.message("C", Array("BEGIN\0".utf8))
        let stream = before + Self.copyIn + Self.ready + Self.message("N", Array("notice".utf8))
        // Every split point, headers included: the boundaries are found across reads.
        // The client's StartupMessage (no type byte) comes first: the hold finds the client's
        // message boundaries after it.
        let startup: [UInt8] = [0, 0, 0, 22, 0, 3, 0, 0] + Array("user\0sf_test\0\0".utf8)
        for split in 1..<stream.count {
            let channel = EmbeddedChannel(handler: CopyResponseHold())
            try channel.writeOutbound(ByteBuffer(bytes: startup))
            try channel.writeOutbound(ByteBuffer(bytes: Self.message("P", Array("\0COPY x FROM STDIN\0\0\0".utf8))))
            try channel.writeInbound(ByteBuffer(bytes: stream[..<split]))
            try channel.writeInbound(ByteBuffer(bytes: stream[split...]))
            #expect(try Self.passed(channel) == before + Self.copyIn, "split at \(split)")
            // Copy data passes out; the server's bytes stay held until CopyDone is written.
            try channel.writeOutbound(ByteBuffer(bytes: Self.message("d", [UInt8](repeating: 7, count: 100))))
            #expect(try Self.passed(channel).isEmpty)
            try channel.writeOutbound(ByteBuffer(bytes: Self.message("c")))
            channel.embeddedEventLoop.run()
            #expect(try Self.passed(channel) == Self.ready + Self.message("N", Array("notice".utf8)), "split at \(split)")
            _ = try channel.finish()
        }
    }

    @Test("past the limit of held bytes, the socket is not read until the copy's data has ended")
    func readsWaitPastTheLimit() throws {
        let channel = EmbeddedChannel(handler: CopyResponseHold())
        try channel.writeOutbound(ByteBuffer(bytes: [0, 0, 0, 8, 0, 3, 0, 0]))
        let outbound = ReadCounter()
        try channel.pipeline.syncOperations.addHandler(outbound, position: .first)
        try channel.writeInbound(ByteBuffer(bytes: Self.copyIn))
        _ = try Self.passed(channel)
        channel.read()
        #expect(outbound.reads == 1)
        // A notice of more than the limit: held, and the next read is not passed on.
        try channel.writeInbound(ByteBuffer(bytes: Self.message("N", [UInt8](repeating: 65, count: CopyResponseHold.maximumHeld))))
        channel.read()
        #expect(outbound.reads == 1)
        try channel.writeOutbound(ByteBuffer(bytes: Self.message("f", Array("stop\0".utf8))))
        channel.embeddedEventLoop.run()
        #expect(outbound.reads == 2, "the read waiting is passed on once the copy's data has ended")
        #expect(try Self.passed(channel).count == 5 + CopyResponseHold.maximumHeld)
        _ = try channel.finish()
    }
}

/// Counts the reads that reach the head of the pipeline.
final class ReadCounter: ChannelOutboundHandler, @unchecked Sendable {
    typealias OutboundIn = Any
    var reads = 0
    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }
}
