import Crypto
import Foundation
import SecureChannel

/// Two parties of one handshake, and helpers to drive it in memory.
struct NoisePair {
    let initiator: Noise.HandshakeState
    let responder: Noise.HandshakeState

    static let initiatorStatic = Curve25519.KeyAgreement.PrivateKey()
    static let responderStatic = Curve25519.KeyAgreement.PrivateKey()

    /// Both parties of `protocolName` with the fixed static keys above (each side knowing the
    /// other's in advance when the pattern needs it) and 32-byte psks of 0x01, 0x02, ...
    init(
        _ protocolName: String, initiatorPrologue: Data = Data("p".utf8), responderPrologue: Data = Data("p".utf8),
        initiatorKnowsResponderAs remote: Curve25519.KeyAgreement.PublicKey? = nil
    ) throws {
        let name = try Noise.ProtocolName(parsing: protocolName)
        let psks = (0..<name.pattern.presharedKeyCount).map { SymmetricKey(data: Data(repeating: UInt8($0 + 1), count: 32)) }
        let needs = { (pre: [Noise.HandshakePattern.Token]) in pre.contains(.s) }
        initiator = try Noise.HandshakeState(
            protocolName: name, role: .initiator, prologue: initiatorPrologue, staticKey: Self.initiatorStatic,
            remoteStaticKey: needs(name.pattern.responderPreMessage) ? (remote ?? Self.responderStatic.publicKey) : nil,
            presharedKeys: psks)
        responder = try Noise.HandshakeState(
            protocolName: name, role: .responder, prologue: responderPrologue, staticKey: Self.responderStatic,
            remoteStaticKey: needs(name.pattern.initiatorPreMessage) ? Self.initiatorStatic.publicKey : nil,
            presharedKeys: psks)
    }

    /// Runs the handshake, passing each message through `tamper(index, message)`, then one transport
    /// message each way (one for one-way patterns). Throws the first error.
    func run(tamper: (Int, Data) -> Data = { $1 }) throws {
        var index = 0
        while !initiator.isComplete {
            let (writer, reader) = initiator.isMyTurn ? (initiator, responder) : (responder, initiator)
            let message = try writer.writeMessage(payload: Data("payload \(index)".utf8))
            _ = try reader.readMessage(tamper(index, message))
            index += 1
        }
        let (i, r) = (try initiator.transportState(), try responder.transportState())
        _ = try r.readMessage(i.writeMessage(Data("to responder".utf8)))
        if !initiator.protocolName.pattern.isOneWay { _ = try i.readMessage(r.writeMessage(Data("to initiator".utf8))) }
    }
}
