import Crypto
import Foundation
import NIOCore
import SecureChannel
import SFTestSupport
import Testing

/// Python `noiseprotocol` as the other end over loopback TCP, in both roles (Tests/peers/noise_peer.py).
@Suite(.serialized) struct NoisePeerTests {
    static let available: Bool = {
        (try? TestSupport.run("python3", ["-c", "import noise.connection"]).status) == 0
    }()

    static let protocols: [String] = ["NN", "XX", "IK"].flatMap { pattern in
        ["ChaChaPoly", "AESGCM"].flatMap { cipher in ["SHA256", "SHA512"].map { "Noise_\(pattern)_25519_\(cipher)_\($0)" } }
    }

    static let sizes = [0, 5, 65_518, 65_519, 200_000]
    static let script = TestSupport.packageRoot.appendingPathComponent("Tests/peers/noise_peer.py").path

    static func message(_ size: Int) -> ByteBuffer { ByteBuffer(bytes: (0..<size).map { UInt8(truncatingIfNeeded: $0 * 7 + size) }) }

    static func hex(_ data: some DataProtocol) -> String { data.map { String(format: "%02x", $0) }.joined() }

    @Test func peerIsInstalled() {
        if TestSupport.isCI { #expect(Self.available, "Python noiseprotocol is missing (python3 -m pip install noiseprotocol)") }
        if !Self.available { print("SKIPPED: Python noiseprotocol not installed; NoisePeerTests do not run") }
    }

    /// Python connects; our server echoes.
    @Test(.enabled(if: available), arguments: protocols)
    func pythonInitiatorSwiftResponder(_ name: String) async throws {
        var configuration = SecureChannel.Configuration()
        configuration.protocolName = try Noise.ProtocolName(parsing: name)
        let pythonKey = Curve25519.KeyAgreement.PrivateKey()
        let peer: SecureChannel.PeerTrust = name.contains("_NN_") ? .anonymous : .pinned(pythonKey.publicKey)
        let echo = try await ChannelFixtures.EchoServer(configuration: configuration, peer: peer)
        defer { Task { await echo.close() } }
        var environment = ["NOISE_STATIC": name.contains("_NN_") ? "" : Self.hex(pythonKey.rawRepresentation)]
        if name.contains("_IK_") { environment["NOISE_REMOTE_STATIC"] = Self.hex(ChannelFixtures.serverKey.publicKey.rawRepresentation) }
        let port = echo.port
        let sizes = Self.sizes.map(String.init).joined(separator: ",")
        let result = try await TestSupport.onOwnThread { [configuration, environment] in
            try TestSupport.run(
                "python3", [Self.script, "initiator", name, Self.hex(configuration.prologue), "\(port)", sizes],
                environment: environment)
        }
        #expect(result.status == 0, "\(name): \(result.stderrText)")
        #expect(result.stdoutText.contains("OK"))
        #expect(echo.received.withLockedValue { $0 } == Self.sizes.map(Self.message))
        #expect(echo.failures.withLockedValue { $0 }.isEmpty)
    }

    /// We connect; Python's server echoes.
    @Test(.enabled(if: available), arguments: protocols)
    func swiftInitiatorPythonResponder(_ name: String) async throws {
        var configuration = SecureChannel.Configuration()
        configuration.protocolName = try Noise.ProtocolName(parsing: name)
        let pythonKey = Curve25519.KeyAgreement.PrivateKey()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestSupport.which("python3") ?? "/usr/bin/python3")
        process.arguments = [Self.script, "responder", name, Self.hex(configuration.prologue)]
        var environment = ProcessInfo.processInfo.environment
        environment["NOISE_STATIC"] = name.contains("_NN_") ? "" : Self.hex(pythonKey.rawRepresentation)
        if name.contains("_IK_") { environment["NOISE_REMOTE_STATIC"] = Self.hex(ChannelFixtures.clientKey.publicKey.rawRepresentation) }
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let portLine = try await TestSupport.onOwnThread { () -> String in
            var line = Data()
            while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
                line += byte
            }
            return String(decoding: line, as: UTF8.self)
        }
        let port = try #require(Int(portLine.dropFirst("PORT ".count)), "python said: \(portLine)")
        let peer: SecureChannel.PeerTrust = name.contains("_NN_") ? .anonymous : .pinned(pythonKey.publicKey)
        let connection = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: port, staticKey: name.contains("_NN_") ? nil : ChannelFixtures.clientKey, peer: peer,
            configuration: configuration)
        if !name.contains("_NN_") { #expect(connection.peerFingerprint == SecureChannel.fingerprint(of: pythonKey.publicKey)) }
        let replies = try await connection.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            var replies = [ByteBuffer]()
            for size in Self.sizes {
                try await outbound.write(Self.message(size))
                replies.append(try #require(await iterator.next()))
            }
            return replies
        }
        #expect(replies == Self.sizes.map(Self.message), "\(name)")
        try await TestSupport.onOwnThread { process.waitUntilExit() }
        #expect(process.terminationStatus == 0, "\(name)")
    }
}
