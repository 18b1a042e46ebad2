import NIOCore
import NIOSSL

/// Keeps the server's messages from postgres-nio while a `COPY … FROM STDIN` sends its data: from
/// the server's CopyInResponse until the client has written its CopyDone or CopyFail.
///
/// postgres-nio 1.33 traps (a precondition, which ends the process) when, in that state, the
/// server sends what ends the copy or the session from its side: a ReadyForQuery, a key or
/// authentication message, or a CommandComplete or ErrorResponse followed by a ReadyForQuery; and
/// when the connection is closed then. A server that lies, a pooler in trouble, or whoever took the
/// port can send that. Held until the copy's data has ended, those messages reach postgres-nio
/// where its protocol expects an answer to the copy: it reads an error or the statement's end as
/// such, and reports anything else as unexpected and closes the connection. The call gets a typed
/// error instead of the process a trap. An honest server may send notices, notifications or
/// parameter changes while a copy's data comes, and an error: they arrive as soon as the data has
/// ended (one write later). At most `maximumHeld` bytes are held; beyond them the socket is no
/// longer read until the copy's data has ended (closing the connection then would trap too), so the
/// server waits rather than this process's memory growing.
///
/// It reads only the messages' boundaries, from the first byte of the protocol (`install`), and
/// sits between TLS and postgres-nio.
final class CopyResponseHold: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The backend's CopyInResponse.
    static let copyInResponse = UInt8(ascii: "G")
    /// The frontend's CopyDone and CopyFail.
    static let copyEnds: [UInt8] = [UInt8(ascii: "c"), UInt8(ascii: "f")]
    /// The most server bytes held while a copy's data is sent; then reads wait.
    static let maximumHeld = 1 << 20

    /// Adds a hold to a new `pipeline` (in the channel's initializer, before postgres-nio's
    /// handlers), so that it reads the protocol from its first byte: now, without TLS; with TLS,
    /// right after the TLS handler postgres-nio adds as it reads the server's yes to TLS (the
    /// first byte the server sends), before any byte within TLS.
    static func install(in pipeline: ChannelPipeline.SynchronousOperations, tls: Bool) throws {
        try pipeline.addHandler(tls ? TLSStartWatch() : CopyResponseHold())
    }

    private var serverMessages = MessageBoundaries()
    /// The client's first message through the hold is its StartupMessage, which has no type byte.
    private var clientMessages = MessageBoundaries(startingUntyped: true)
    /// The server's bytes held back since the copy began, in order; nil while none are.
    private var held: ByteBuffer?
    /// A read asked for while `maximumHeld` bytes were held, to be passed on once they go on.
    private var readWaiting = false

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

    func read(context: ChannelHandlerContext) {
        guard let held, held.readableBytes >= Self.maximumHeld else { return context.read() }
        readWaiting = true
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let copyEnds = clientMessages.startsAny(of: Self.copyEnds, in: unwrapOutboundIn(data))
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
    /// end of another CopyInResponse among it), and reads go on.
    private func release(context: ChannelHandlerContext) {
        guard let bytes = held else { return }
        held = nil
        if bytes.readableBytes > 0 { pass(bytes, context: context) }
        context.fireChannelReadComplete()
        if readWaiting, held == nil {
            readWaiting = false
            context.read()
        }
    }
}

/// Adds the `CopyResponseHold` of a connection with TLS right after the TLS handler, which
/// postgres-nio adds while it reads the server's first byte (its yes to TLS), and leaves.
final class TLSStartWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
        let pipeline = context.pipeline.syncOperations
        // No TLS handler: the server said no (or something else), and postgres-nio fails the connection.
        if let tls = try? pipeline.handler(type: NIOSSLClientHandler.self) {
            do {
                try pipeline.addHandler(CopyResponseHold(), position: .after(tls))
            } catch {
                context.fireErrorCaught(error)
                context.close(promise: nil)
            }
        }
        pipeline.removeHandler(context: context, promise: nil)
    }
}

/// Where the messages of one direction of the protocol begin and end: each a type byte, then a
/// 4-byte big-endian length that counts itself and the body; the client's first (its
/// StartupMessage, or an SSLRequest) has no type byte. Bytes are scanned once, in order; a header is
/// read whole where it lies in one buffer, else byte by byte across them.
struct MessageBoundaries {
    /// The bytes of a header split across buffers, read so far (fewer than a header's).
    private var partialHeader: [UInt8] = []
    /// The next message has no type byte (its header is its length alone).
    private var untyped: Bool

    /// Boundaries from the start of a direction; `startingUntyped` for the client's.
    init(startingUntyped: Bool = false) { untyped = startingUntyped }
    /// The current message's type, once its header is read.
    private var type: UInt8 = 0
    /// Body bytes of the current message still to come.
    private var remaining = 0

    /// Scans `bytes` up to the end of the first message of `wanted` that ends in them, and returns
    /// that end's offset from the buffer's reader index (nil, having scanned them all, if none).
    mutating func end(ofFirst wanted: UInt8, in bytes: ByteBuffer) -> Int? {
        scan(bytes, stoppingAfter: wanted)
    }

    /// Scans all of `bytes`; whether a message of one of `types` begins in them.
    mutating func startsAny(of types: [UInt8], in bytes: ByteBuffer) -> Bool {
        var found = false
        _ = scan(bytes, begun: { if types.contains($0) { found = true } })
        return found
    }

    /// Scans `bytes`, telling `begun` each message's type as it begins, up to the end of the first
    /// message of type `stop`; returns that end's offset from the reader index, or nil having
    /// scanned them all.
    private mutating func scan(_ bytes: ByteBuffer, begun: (UInt8) -> Void = { _ in }, stoppingAfter stop: UInt8? = nil) -> Int? {
        var offset = 0
        let count = bytes.readableBytes, start = bytes.readerIndex
        while offset < count {
            if remaining > 0 {
                let step = min(remaining, count - offset)
                remaining -= step
                offset += step
                if remaining == 0, type == stop { return offset }
                continue
            }
            let length: UInt32
            let typeBytes = untyped ? 0 : 1
            if partialHeader.isEmpty, count - offset >= typeBytes + 4 {
                type = untyped ? 0 : bytes.getInteger(at: start + offset, as: UInt8.self)!
                if !untyped { begun(type) }
                length = bytes.getInteger(at: start + offset + typeBytes, as: UInt32.self)!
                offset += typeBytes + 4
            } else {
                let byte = bytes.getInteger(at: start + offset, as: UInt8.self)!
                if partialHeader.isEmpty, !untyped { begun(byte) }
                partialHeader.append(byte)
                offset += 1
                guard partialHeader.count == typeBytes + 4 else { continue }
                type = untyped ? 0 : partialHeader[0]
                length = partialHeader[typeBytes...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                partialHeader.removeAll(keepingCapacity: true)
            }
            untyped = false
            // A length below 4 is malformed: postgres-nio's decoder reports it; here it ends the message.
            remaining = max(0, Int(length) - 4)
            if remaining == 0, type == stop { return offset }
        }
        return nil
    }
}
