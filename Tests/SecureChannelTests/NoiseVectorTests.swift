import Crypto
import Foundation
@_spi(KnownAnswerTesting) import NoiseProtocol
import SecureChannel
import SFTestSupport
import Testing

/// The cacophony vectors (Tests/Vectors/noise/README.md), message by message.
@Suite struct NoiseVectorTests {
    struct Vector: Decodable {
        let protocol_name: String
        let init_prologue: String
        let resp_prologue: String
        let init_static: String?
        let resp_static: String?
        let init_ephemeral: String?
        let resp_ephemeral: String?
        let init_remote_static: String?
        let resp_remote_static: String?
        let init_psks: [String]?
        let resp_psks: [String]?
        let handshake_hash: String?
        let messages: [Message]

        struct Message: Decodable {
            let payload: String
            let ciphertext: String
        }
    }

    static func loadVectors() throws -> [Vector]? {
        let local = TestSupport.packageRoot.appendingPathComponent("Tests/Vectors/noise/cacophony.txt")
        let data: Data? =
            FileManager.default.fileExists(atPath: local.path)
            ? try Data(contentsOf: local) : try TestSupport.vector("noise/cacophony.txt")
        guard let data else { return nil }
        struct File: Decodable { let vectors: [Vector] }
        return try JSONDecoder().decode(File.self, from: data).vectors
    }

    @Test func everySupportedVectorPasses() throws {
        guard let vectors = try Self.loadVectors() else {
            Issue.record("cacophony.txt not found")
            return
        }
        var ran = 0
        var skipped = [String: Int]()
        for vector in vectors {
            let name: Noise.ProtocolName
            do {
                name = try Noise.ProtocolName(parsing: vector.protocol_name)
            } catch let error {
                switch error {
                case .unsupportedDH(let what), .unsupportedHash(let what): skipped[what, default: 0] += 1
                default:
                    // An unsupported pattern or cipher is a failure: every suite in the file is one we claim.
                    Issue.record("\(vector.protocol_name) skipped: \(error)")
                }
                continue
            }
            try run(vector, name)
            ran += 1
        }
        let skippedText = skipped.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
        print("Noise vectors: \(ran) ran, \(skipped.values.reduce(0, +)) skipped for an unsupported primitive (\(skippedText))")
        let supported = vectors.filter { !$0.protocol_name.contains("_448_") && !$0.protocol_name.contains("BLAKE2") }.count
        #expect(ran == supported, "a vector of a supported suite was skipped")
        #expect(ran == 236)
    }

    private func run(_ vector: Vector, _ name: Noise.ProtocolName) throws {
        func privateKey(_ hex: String?) throws -> Curve25519.KeyAgreement.PrivateKey? {
            try hex.map { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: Data(hexString: $0)) }
        }
        func publicKey(_ hex: String?) throws -> Curve25519.KeyAgreement.PublicKey? {
            try hex.map { try Curve25519.KeyAgreement.PublicKey(rawRepresentation: Data(hexString: $0)) }
        }
        let initiator = try Noise.HandshakeState(
            protocolName: name, role: .initiator, prologue: Data(hexString: vector.init_prologue),
            staticKey: privateKey(vector.init_static), remoteStaticKey: publicKey(vector.init_remote_static),
            presharedKeys: (vector.init_psks ?? []).map { SymmetricKey(data: Data(hexString: $0)) },
            fixedEphemeralKey: privateKey(vector.init_ephemeral))
        let responder = try Noise.HandshakeState(
            protocolName: name, role: .responder, prologue: Data(hexString: vector.resp_prologue),
            staticKey: privateKey(vector.resp_static), remoteStaticKey: publicKey(vector.resp_remote_static),
            presharedKeys: (vector.resp_psks ?? []).map { SymmetricKey(data: Data(hexString: $0)) },
            fixedEphemeralKey: privateKey(vector.resp_ephemeral))
        let handshakeCount = name.pattern.messages.count
        for (index, message) in vector.messages.enumerated() {
            let payload = Data(hexString: message.payload), expected = Data(hexString: message.ciphertext)
            let context = "\(vector.protocol_name) message \(index)"
            if index < handshakeCount {
                let (writer, reader) = name.pattern.messages[index].sender == .initiator ? (initiator, responder) : (responder, initiator)
                let ciphertext = try writer.writeMessage(payload: payload)
                #expect(ciphertext == expected, "\(context)")
                #expect(try reader.readMessage(ciphertext) == payload, "\(context)")
                if index == handshakeCount - 1, let hash = vector.handshake_hash {
                    #expect(initiator.handshakeHash == Data(hexString: hash), "\(context) handshake hash")
                    #expect(responder.handshakeHash == Data(hexString: hash), "\(context) handshake hash")
                }
            } else {
                let fromInitiator = name.pattern.isOneWay || index % 2 == 0
                let (writer, reader) =
                    fromInitiator
                    ? (try initiator.transportState(), try responder.transportState())
                    : (try responder.transportState(), try initiator.transportState())
                let ciphertext = try writer.writeMessage(payload)
                #expect(ciphertext == expected, "\(context)")
                #expect(try reader.readMessage(ciphertext) == payload, "\(context)")
            }
        }
        #expect(initiator.isComplete && responder.isComplete, "\(vector.protocol_name) completes")
    }
}
