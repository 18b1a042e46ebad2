import NIOCore
import NIOSSL

/// Keeps the server's messages from postgres-nio while a `COPY … FROM STDIN` sends its data: from
/// the server's CopyInResponse until the client has written its CopyDone or CopyFail.
///
/// postgres-nio 1.33 traps (a precondition, which ends the process) when, in that state, the
/// server sends what ends the copy or the session from its side: a ReadyForQuery, a key or
/// authentication message, or a CommandComplete or ErrorResponse followed by a ReadyForQuery. A
/// server that lies, a pooler in trouble, or whoever took the port can send that. Held until the
/// copy's data has ended, those messages reach postgres-nio where its protocol expects an answer
/// to the copy: it reads an error or the statement's end as such, and reports anything else as
/// unexpected and closes the connection. The call gets a typed error instead of the process a
/// trap. An honest server sends nothing while a copy's data comes but an ErrorResponse, which then
/// arrives as soon as the data has ended (one write later).
///
/// It sits between TLS and postgres-nio, added once the connection is established (every message
/// from then on starts with its type byte), and reads only the messages' boundaries.
final class CopyResponseHold: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The backend's CopyInResponse, and the frontend's CopyDone and CopyFail.
    static let copyInResponse = UInt8(ascii: "G"), copyDone = UInt8(ascii: "c"), copyFail = UInt8(ascii: "f")

    /// Adds a hold to an established connection's `channel`: right after TLS, or first without it.
    static func install(on channel: any Channel) throws {
        let pipeline = channel.pipeline.syncOperations
        if let tls = try? pipeline.handler(type: NIOSSLClientHandler.self) {
            try pipeline.addHandler(CopyResponseHold(), position: .after(tls))
        } else {
            try pipeline.addHandler(CopyResponseHold(), position: .first)
        }
    }

    private var serverMessages = MessageBoundaries()
    private var clientMessages = MessageBoundaries()
    /// The server's bytes held back since the copy began, in order; nil while none are.
    private var held: ByteBuffer?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        guard held == nil else {
            held!.writeBuffer(&bytes)
            return
        }
        pass(bytes, context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if held == nil { context.fireChannelReadComplete() }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let bytes = unwrapOutboundIn(data)
        let copyEnds = clientMessages.startsAny(of: [Self.copyDone, Self.copyFail], in: bytes)
        context.write(data, promise: promise)
        // In a later job: postgres-nio is in the middle of its own action now, and has left copy
        // mode before it writes its CopyDone or CopyFail.
        if copyEnds, held != nil {
            context.eventLoop.assumeIsolated().execute { [self] in release(context: context) }
        }
    }

    /// Passes `bytes` on up to the end of a CopyInResponse, if one ends in them, and holds the rest.
    private func pass(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        var bytes = bytes
        guard let end = serverMessages.end(ofFirst: Self.copyInResponse, in: bytes) else {
            context.fireChannelRead(wrapInboundOut(bytes))
            return
        }
        let head = bytes.readSlice(length: end)!
        held = bytes
        context.fireChannelRead(wrapInboundOut(head))
    }

    /// The copy's data has ended: what the server sent meanwhile goes on (held again from the
    /// end of another CopyInResponse among it).
    private func release(context: ChannelHandlerContext) {
        guard let bytes = held else { return }
        held = nil
        if bytes.readableBytes > 0 { pass(bytes, context: context) }
        context.fireChannelReadComplete()
    }
}

/// Where the messages of one direction of the protocol begin and end: each a type byte, then a
/// 4-byte big-endian length that counts itself and the body. Bytes are scanned once, in order.
struct MessageBoundaries {
    /// The current message's header bytes read so far (up to 5).
    private var header: [UInt8] = []
    /// The current message's type, once its header is read.
    private var type: UInt8 = 0
    /// Body bytes of the current message still to come.
    private var remaining = 0

    /// Scans `bytes` up to the end of the first message of `wanted` that ends in them, and returns
    /// that end's offset from the buffer's reader index (nil, having scanned them all, if none).
    mutating func end(ofFirst wanted: UInt8, in bytes: ByteBuffer) -> Int? {
        scan(bytes, stoppingAfter: { $0 == wanted })
    }

    /// Scans all of `bytes`; whether a message of one of `types` begins in them.
    mutating func startsAny(of types: [UInt8], in bytes: ByteBuffer) -> Bool {
        var found = false
        _ = scan(bytes, begun: { if types.contains($0) { found = true } })
        return found
    }

    /// Scans `bytes`, telling `begun` each message's type as it begins, up to the end of the first
    /// message whose type `stoppingAfter` accepts; returns that end's offset from the reader
    /// index, or nil having scanned them all.
    private mutating func scan(
        _ bytes: ByteBuffer, begun: (UInt8) -> Void = { _ in }, stoppingAfter stop: (UInt8) -> Bool = { _ in false }
    ) -> Int? {
        var offset = 0
        let count = bytes.readableBytes
        while offset < count {
            if remaining > 0 {
                let step = min(remaining, count - offset)
                remaining -= step
                offset += step
                if remaining == 0, stop(type) { return offset }
                continue
            }
            let byte = bytes.getInteger(at: bytes.readerIndex + offset, as: UInt8.self)!
            if header.isEmpty { begun(byte) }
            header.append(byte)
            offset += 1
            guard header.count == 5 else { continue }
            type = header[0]
            // A length below 4 is malformed: postgres-nio's decoder reports it; here it ends the message.
            remaining = max(0, Int(header[1..<5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }) - 4)
            header = []
            if remaining == 0, stop(type) { return offset }
        }
        return nil
    }
}
