import Crypto
import Foundation
import FuzzSupport
@_spi(KnownAnswerTesting) import NoiseProtocol

// The Noise handshake and transport messages as a peer sends them, for every pattern and role, at
// every message position. Input: pattern (1 byte) || flags (1 byte: bit 0 = the reading party is the
// responder, bits 1–3 = which of its incoming handshake messages is replaced, bit 4 = AESGCM,
// bit 5 = SHA512) || frames, each a u16be length and bytes: the first replaces that handshake message;
// once the reading party's handshake completes, the rest are read as transport messages.
// Both parties have fixed static and ephemeral keys (the known-answer initializer), so the honest
// messages are deterministic: the seeds hold them, and a mutated seed explores one field at a time.
let patterns = Noise.HandshakePattern.fundamentalPatternNames + ["NNpsk0", "XXpsk3", "IKpsk2", "NKpsk0"]
func key(_ byte: UInt8) -> Curve25519.KeyAgreement.PrivateKey {
    try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: byte, count: 31) + [0x40])
}
let statics = (initiator: key(1), responder: key(2))
let ephemerals = (initiator: key(3), responder: key(4))
let psk = SymmetricKey(data: [UInt8](repeating: 5, count: 32))

/// The two parties of `name` with fixed keys.
func parties(_ name: String, aesGCM: Bool, sha512: Bool) throws -> (initiator: Noise.HandshakeState, responder: Noise.HandshakeState) {
    let pattern = try Noise.HandshakePattern(named: name)
    let protocolName = Noise.ProtocolName(pattern: pattern, cipher: aesGCM ? .aesGCM : .chaChaPoly, hash: sha512 ? .sha512 : .sha256)
    let psks = [SymmetricKey](repeating: psk, count: pattern.presharedKeyCount)
    let initiator = try Noise.HandshakeState(
        protocolName: protocolName, role: .initiator, prologue: Data("fuzz".utf8), staticKey: statics.initiator,
        remoteStaticKey: statics.responder.publicKey, presharedKeys: psks, fixedEphemeralKey: ephemerals.initiator)
    let responder = try Noise.HandshakeState(
        protocolName: protocolName, role: .responder, prologue: Data("fuzz".utf8), staticKey: statics.responder,
        remoteStaticKey: statics.initiator.publicKey, presharedKeys: psks, fixedEphemeralKey: ephemerals.responder)
    return (initiator, responder)
}

/// Runs the handshake honestly, except that the `position`-th message `reader` receives is
/// `replacement(honest)`; then reads `transport` frames with the reader's transport state.
func run(_ name: String, aesGCM: Bool, sha512: Bool, reader: Noise.Role, position: Int,
         replacement: (Data) -> Data, transport: [Data], record: ((Data) -> Void)? = nil) {
    guard let (initiator, responder) = try? parties(name, aesGCM: aesGCM, sha512: sha512) else { return }
    var received = 0
    while !(initiator.isComplete && responder.isComplete) {
        let (sender, receiver) = initiator.isMyTurn ? (initiator, responder) : (responder, initiator)
        guard sender.isMyTurn, let honest = try? sender.writeMessage(payload: Data("payload".utf8)) else { return }
        var message = honest
        if receiver.role == reader {
            if received == position {
                message = replacement(honest)
                record?(honest)
            }
            received += 1
        }
        guard (try? receiver.readMessage(message)) != nil else { return }
    }
    let readerState = reader == .initiator ? initiator : responder
    let senderState = reader == .initiator ? responder : initiator
    guard let readerTransport = try? readerState.transportState(), let senderTransport = try? senderState.transportState() else { return }
    if let record, let honest = try? senderTransport.writeMessage(Data("transport".utf8)) { record(honest) }
    for frame in transport { _ = try? readerTransport.readMessage(frame) }
}

func frames(_ bytes: ArraySlice<UInt8>) -> [Data] {
    var rest = bytes, result = [Data]()
    while rest.count >= 2 {
        let length = Int(rest[rest.startIndex]) << 8 | Int(rest[rest.startIndex + 1])
        rest = rest.dropFirst(2)
        result.append(Data(rest.prefix(length)))
        rest = rest.dropFirst(length)
    }
    return result
}

func framed(_ messages: [Data]) -> Data {
    messages.reduce(into: Data()) { $0 += [UInt8(($1.count >> 8) & 0xff), UInt8($1.count & 0xff)] + $1 }
}

Fuzz.main(seeds: {
    var seeds: [Data] = []
    for (index, name) in patterns.enumerated() {
        for reader in [Noise.Role.initiator, .responder] {
            for position in 0..<3 {
                var honest: [Data] = []
                run(name, aesGCM: false, sha512: false, reader: reader, position: position, replacement: { $0 }, transport: [],
                    record: { honest.append($0) })
                guard !honest.isEmpty else { continue }
                let flags = UInt8(reader == .responder ? 1 : 0) | UInt8(position << 1)
                seeds.append(Data([UInt8(index), flags]) + framed(honest))
            }
        }
    }
    return seeds
}) { input in
    guard input.count >= 2 else { return }
    let bytes = [UInt8](input)
    let name = patterns[Int(bytes[0]) % patterns.count]
    let flags = bytes[1]
    let messages = frames(bytes[2...])
    guard let first = messages.first else { return }
    run(name, aesGCM: flags & 0x10 != 0, sha512: flags & 0x20 != 0, reader: flags & 1 == 0 ? .initiator : .responder,
        position: Int(flags >> 1) & 7, replacement: { _ in first }, transport: Array(messages.dropFirst()))
}
