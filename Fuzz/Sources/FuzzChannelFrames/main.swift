import Crypto
import Foundation
import FuzzSupport
import NIOCore
import NIOEmbedded
@_spi(Fuzzing) import NoiseProtocol
@_spi(Fuzzing) import SecureChannel

// A peer's byte stream after the handshake, as the channel's inbound pipeline receives it (frame
// decoder, transport decryption, application reassembly), split into socket reads at arbitrary
// points. Input: flags (1 byte: bits 0–1 how the stream ends: 0 not at all, 1 the peer shuts its
// output, 2 the connection closes) || operations, each an op byte then a u16be length and bytes:
//   op % 4 == 0  the bytes sealed by the honest peer as one transport message, framed;
//   op % 4 == 1  the bytes as they are (a forged frame, a bare length, garbage);
//   op % 4 == 2  a socket read ends here (the bytes are ignored);
//   op % 4 == 3  the bytes sealed but never sent (the next sealed message is out of order).
// The honest peer's messages are application framing (flag byte, chunk) when the fuzzer writes it
// so, and the seeds do. Checked beyond "no crash": the same stream delivered in one read gives the
// same messages, end of stream and error as the split stream; no message exceeds the limit.
let maxMessageLength = 200_000

/// The two ends of an established session with fixed keys (as `Split()` would give them): the
/// same keys every time, so a seed's sealed frames stay valid.
func transportPair() -> (peer: Noise.TransportState, receiver: Noise.TransportState) {
    func cipher() -> Noise.CipherState {
        let state = Noise.CipherState(cipher: .chaChaPoly)
        state.initializeKey(SymmetricKey(data: [UInt8](repeating: 0x42, count: 32)))
        return state
    }
    let hash = Data(repeating: 0, count: 32)
    return (
        Noise.TransportState(role: .initiator, handshakeHash: hash, remoteStaticKey: nil, sending: cipher(), receiving: nil),
        Noise.TransportState(role: .responder, handshakeHash: hash, remoteStaticKey: nil, sending: nil, receiving: cipher())
    )
}

enum Operation {
    case sealed([UInt8]), raw([UInt8]), split, skipped([UInt8])
}

func operations(_ bytes: ArraySlice<UInt8>) -> [Operation] {
    var rest = bytes, result: [Operation] = []
    while rest.count >= 3 {
        let op = rest[rest.startIndex] % 4
        let length = Int(rest[rest.startIndex + 1]) << 8 | Int(rest[rest.startIndex + 2])
        rest = rest.dropFirst(3)
        let payload = [UInt8](rest.prefix(length))
        rest = rest.dropFirst(length)
        result.append([Operation.sealed(payload), .raw(payload), .split, .skipped(payload)][Int(op)])
    }
    return result
}

/// The socket reads the operations make: the stream, cut at each split.
func reads(_ operations: [Operation], peer: Noise.TransportState) -> [[UInt8]] {
    var reads: [[UInt8]] = [[]]
    for operation in operations {
        switch operation {
        case .sealed(let plaintext):
            guard let message = try? peer.writeMessage(plaintext), message.count <= Noise.maxMessageLength else { continue }
            reads[reads.count - 1] += [UInt8(message.count >> 8), UInt8(message.count & 0xff)] + message
        case .raw(let bytes): reads[reads.count - 1] += bytes
        case .split: reads.append([])
        case .skipped(let plaintext): _ = try? peer.writeMessage(plaintext)
        }
    }
    return reads.filter { !$0.isEmpty }
}

/// What the application sees.
struct Outcome: Equatable {
    var messages: [[UInt8]] = []
    var endOfStream = false
    var error: String?
}

final class Collector: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var outcome = Outcome()
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        outcome.messages.append(buffer.readBytes(length: buffer.readableBytes)!)
    }
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { outcome.endOfStream = true }
    }
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if outcome.error == nil { outcome.error = String(describing: error) }
    }
}

func receive(_ reads: [[UInt8]], ending: UInt8) -> Outcome {
    let (_, receiver) = transportPair()
    let channel = EmbeddedChannel()
    let collector = Collector()
    try! SecureChannel.addEstablishedInboundHandlers(to: channel.pipeline.syncOperations, transport: receiver, maxMessageLength: maxMessageLength)
    try! channel.pipeline.syncOperations.addHandler(collector)
    for read in reads where channel.isActive {
        try? channel.writeInbound(channel.allocator.buffer(bytes: read))
    }
    if channel.isActive {
        switch ending {
        case 1: channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        case 2: channel.pipeline.fireChannelInactive()
        default: break
        }
    }
    _ = try? channel.finish()
    return collector.outcome
}

func honestStream(_ messages: [[UInt8]]) -> Data {
    var input = Data([1])  // the stream ends with the peer shutting its output
    for message in messages {
        var rest = message[...]
        repeat {
            let chunk = rest.prefix(1000)
            rest = rest.dropFirst(chunk.count)
            let plaintext = [rest.isEmpty ? 1 : 0] + chunk
            input += [0, UInt8(plaintext.count >> 8), UInt8(plaintext.count & 0xff)] + plaintext
            input += [2, 0, 0]
        } while !rest.isEmpty
    }
    input += [0, 0, 1, 2]  // the end of stream
    return input
}

Fuzz.main(seeds: {
    [
        honestStream([Array("hello".utf8)]),
        honestStream([[], Array(repeating: 0x61, count: 2500), Array("bye".utf8)]),
        honestStream([Array(repeating: 0x62, count: 300)]) + [1, 0, 2, 0, 40],
        Data([2, 3, 0, 2, 1, 0x78, 0, 0, 2, 1, 0x79]),
    ]
}) { input in
    guard let ending = input.first else { return }
    let ops = operations([UInt8](input).dropFirst())
    let split = receive(reads(ops, peer: transportPair().peer), ending: ending % 4)
    let whole = receive([reads(ops, peer: transportPair().peer).flatMap { $0 }].filter { !$0.isEmpty }, ending: ending % 4)
    precondition(split == whole, "the split stream gave \(split), the whole stream \(whole)")
    precondition(split.messages.allSatisfy { $0.count <= maxMessageLength }, "a message over the limit was delivered")
}
