import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SecureChannel
import SecureCore
import SecureKeychain
import SecureKeyStore
import SecureKeys
import SFTestSupport
import Testing

/// The SwiftNIO transport over 127.0.0.1: happy paths, trust policies and misbehaving peers.
@Suite struct ChannelTests {
    typealias Fixtures = ChannelFixtures

    @Test func roundTripAuthenticatesBothEnds() async throws {
        let echo = try await Fixtures.EchoServer()
        defer { Task { await echo.close() } }
        let connection = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: echo.port, staticKey: Fixtures.clientKey, peer: .pinned(Fixtures.serverKey.publicKey))
        #expect(connection.peerFingerprint == SecureChannel.fingerprint(of: Fixtures.serverKey.publicKey))
        #expect(connection.handshakeHash.count == 32)
        let reply = try await connection.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: "hello"))
            var iterator = inbound.makeAsyncIterator()
            return try await iterator.next()
        }
        #expect(reply == ByteBuffer(string: "hello"))
        #expect(echo.accepted.withLockedValue { $0 } == 1)
    }

    @Test func largeAndEmptyMessagesAreSplitAndReassembled() async throws {
        let echo = try await Fixtures.EchoServer()
        defer { Task { await echo.close() } }
        let connection = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: echo.port, staticKey: Fixtures.clientKey, peer: .pinned(Fixtures.serverKey.publicKey))
        let sizes = [0, 1, 65_518, 65_519, 200_000, 1 << 20]
        let messages = sizes.map { size in ByteBuffer(bytes: (0..<size).map { UInt8(truncatingIfNeeded: $0 * 7 + size) }) }
        let replies = try await connection.executeThenClose { inbound, outbound in
            for message in messages { try await outbound.write(message) }
            var replies = [ByteBuffer]()
            for try await reply in inbound {
                replies.append(reply)
                if replies.count == messages.count { break }
            }
            return replies
        }
        #expect(replies == messages)
    }

    /// Far more than the socket buffers hold, written without waiting for the echoes: the
    /// transport queues messages while the channel is unwritable and seals them as the socket
    /// drains, reusing its frame buffers. Every message must come back whole and in order; the
    /// sizes cross chunk boundaries and the 15-frame batches of one send buffer.
    @Test(arguments: ["Noise_XX_25519_ChaChaPoly_SHA256", "Noise_XX_25519_AESGCM_SHA512"])
    func messagesWrittenAheadOfTheSocketArriveWholeAndInOrder(_ name: String) async throws {
        var configuration = SecureChannel.Configuration()
        configuration.protocolName = try Noise.ProtocolName(parsing: name)
        let echo = try await Fixtures.EchoServer(configuration: configuration)
        defer { Task { await echo.close() } }
        let connection = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: echo.port, staticKey: Fixtures.clientKey, peer: .pinned(Fixtures.serverKey.publicKey),
            configuration: configuration)
        let base = [UInt8](SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }) + (0..<3_100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let sizes = [0, 1, 65_518, 65_519, 65_518 * 15, 65_518 * 15 + 1, 1 << 20, 3_000_000]
        let messages = (0..<24).map { index in
            let size = sizes[index % sizes.count]
            return ByteBuffer(bytes: base[index..<(index + size)])
        }
        let replies = try await connection.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: Void.self) { writers in
                writers.addTask {
                    for message in messages { try await outbound.write(message) }
                }
                var replies = [ByteBuffer]()
                for try await reply in inbound {
                    replies.append(reply)
                    if replies.count == messages.count { break }
                }
                try await writers.waitForAll()
                return replies
            }
        }
        // Compared by digest, so a failure prints 24 short lines rather than 30 MB.
        func digests(_ buffers: [ByteBuffer]) -> [String] {
            buffers.map { "\($0.readableBytes) \(SHA256.hash(data: Data($0.readableBytesView)))" }
        }
        #expect(digests(replies) == digests(messages))
    }

    @Test func wrongServerKeyIsATypedErrorAndNothingIsDelivered() async throws {
        let echo = try await Fixtures.EchoServer()
        defer { Task { await echo.close() } }
        let stranger = Curve25519.KeyAgreement.PrivateKey().publicKey
        let actual = SecureChannel.fingerprint(of: Fixtures.serverKey.publicKey)
        await #expect(throws: SecureChannelError.peerKeyMismatch(expected: SecureChannel.fingerprint(of: stranger).description, actual: actual)) {
            _ = try await SecureChannel.Client.connect(
                host: "127.0.0.1", port: echo.port, staticKey: Fixtures.clientKey, peer: .pinned(stranger))
        }
        await #expect(throws: SecureChannelError.self) {
            _ = try await SecureChannel.Client.connect(
                host: "127.0.0.1", port: echo.port, staticKey: Fixtures.clientKey,
                peer: .fingerprint(SecureChannel.fingerprint(of: stranger)))
        }
        // The right fingerprint is accepted.
        _ = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: echo.port, staticKey: Fixtures.clientKey, peer: .fingerprint(actual))
        // IK needs the server's key in advance: with a wrong pinned key the server cannot even decrypt.
        var ik = SecureChannel.Configuration()
        ik.protocolName = try Noise.ProtocolName(parsing: "Noise_IK_25519_ChaChaPoly_SHA256")
        await #expect(throws: SecureChannelError.peerKeyRequired) {
            _ = try await SecureChannel.Client.connect(
                host: "127.0.0.1", port: echo.port, staticKey: Fixtures.clientKey, peer: .fingerprint(actual), configuration: ik)
        }
        #expect(echo.received.withLockedValue { $0.isEmpty })
    }

    @Test func serverRejectsAWrongClientBeforeDeliveringAnything() async throws {
        let echo = try await Fixtures.EchoServer(peer: .pinned(Curve25519.KeyAgreement.PrivateKey().publicKey))
        defer { Task { await echo.close() } }
        // In XX the client's key arrives in the last message: the client thinks it is connected,
        // sends at once, and the server must drop both the connection and the message.
        let connection = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: echo.port, staticKey: Fixtures.clientKey, peer: .pinned(Fixtures.serverKey.publicKey))
        let reply = try? await connection.executeThenClose { inbound, outbound in
            try? await outbound.write(ByteBuffer(string: "secret"))
            var iterator = inbound.makeAsyncIterator()
            return try await iterator.next()
        }
        #expect(reply == nil)
        await echo.waitUntil { !echo.failures.withLockedValue { $0.isEmpty } }
        let failures = echo.failures.withLockedValue { $0 }
        guard case .peerKeyMismatch(_, let actual)? = failures.first else {
            Issue.record("expected peerKeyMismatch, got \(failures)")
            return
        }
        #expect(actual == SecureChannel.fingerprint(of: Fixtures.clientKey.publicKey))
        #expect(echo.accepted.withLockedValue { $0 } == 0)
        #expect(echo.received.withLockedValue { $0.isEmpty })
    }

    @Test func handshakeTimeoutOnBothSides() async throws {
        // Short enough to wait for, long enough for a whole handshake of the last check's honest
        // client on a loaded machine (debug build, shared event loops).
        var quick = SecureChannel.Configuration()
        quick.handshakeTimeout = .seconds(5)
        let echo = try await Fixtures.EchoServer(configuration: quick)
        defer { Task { await echo.close() } }
        // A client that connects and never speaks.
        let silent = try RawPeer(port: echo.port, readTimeout: 120)
        #expect(silent.waitForClose())
        await echo.waitUntil { echo.failures.withLockedValue { $0.contains(.handshakeTimeout) } }
        #expect(echo.failures.withLockedValue { $0 } == [.handshakeTimeout])
        // A client that sends message 1 and never finishes (XX message 3 missing).
        let stalled = try RawPeer(port: echo.port, readTimeout: 120)
        let initiator = try Noise.HandshakeState(
            protocolName: quick.protocolName, role: .initiator, prologue: quick.prologue, staticKey: Fixtures.clientKey)
        stalled.sendFrame(try initiator.writeMessage())
        #expect(stalled.receiveFrame() != nil)
        #expect(stalled.waitForClose())
        // A server that accepts and never answers: the client times out.
        let mute = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        defer { mute.close(promise: nil) }
        await #expect(throws: SecureChannelError.handshakeTimeout) {
            _ = try await SecureChannel.Client.connect(
                host: "127.0.0.1", port: mute.localAddress!.port!, staticKey: Fixtures.clientKey,
                peer: .anyAuthenticatedKey, configuration: quick)
        }
        #expect(try await Fixtures.echo(ByteBuffer(string: "still serving"), port: echo.port) == ByteBuffer(string: "still serving"))
    }

    @Test func malformedOversizedAndTruncatedFramesAreRejected() async throws {
        var small = SecureChannel.Configuration()
        small.maxFrameLength = 1000
        let echo = try await Fixtures.EchoServer(configuration: small)
        defer { Task { await echo.close() } }
        let cases: [(Data, [SecureChannelError])] = [
            (Data([0x03, 0xE9]) + Data(count: 1001), [.frameTooLarge(length: 1001, limit: 1000)]),
            (Data([0xFF, 0xFF]), [.frameTooLarge(length: 65_535, limit: 1000)]),
            (Data([0x00, 0x00]), [.emptyFrame]),
            (Data([0x00, 0x0A]) + Data(count: 10), [.noise(.messageTooShort)]),
            (Data([0x00, 0x20]) + Data(count: 10), [.truncatedFrame, .connectionClosedDuringHandshake]),  // then EOF
            (Data([0x00]), [.truncatedFrame, .connectionClosedDuringHandshake]),
        ]
        for (index, (bytes, expected)) in cases.enumerated() {
            let peer = try RawPeer(port: echo.port)
            peer.send(bytes)
            peer.shutdownWrite()
            #expect(peer.waitForClose(), "case \(index)")
            await echo.waitUntil { echo.failures.withLockedValue { $0.count } > index }
            let failure = echo.failures.withLockedValue { $0.count > index ? $0[index] : nil }
            #expect(failure.map(expected.contains) == true, "case \(index): \(String(describing: failure))")
        }
        #expect(try await Fixtures.echo(ByteBuffer(string: "after"), port: echo.port) == ByteBuffer(string: "after"))
        #expect(echo.accepted.withLockedValue { $0 } == 1)
    }

    @Test func everyFlippedHandshakeByteFailsTheHandshake() async throws {
        let echo = try await Fixtures.EchoServer()
        defer { Task { await echo.close() } }
        let configuration = SecureChannel.Configuration()
        // Message 1 (`-> e`, 32 bytes) and message 3 (`-> s, se`, 64 bytes) of XX come from the client.
        for (message, length) in [(0, 32), (2, 64)] {
            for position in stride(from: 0, to: length, by: 7) {
                let peer = try RawPeer(port: echo.port)
                let initiator = try Noise.HandshakeState(
                    protocolName: configuration.protocolName, role: .initiator, prologue: configuration.prologue,
                    staticKey: Fixtures.clientKey)
                var first = try initiator.writeMessage()
                if message == 0 { first[position] ^= 0x01 }
                peer.sendFrame(first)
                guard let second = peer.receiveFrame() else {
                    Issue.record("no message 2")
                    continue
                }
                if message == 0 {
                    // The server's reply is bound to the altered e: the client cannot read it.
                    #expect(throws: NoiseError.decryptionFailed) { try initiator.readMessage(second) }
                    peer.shutdownWrite()
                } else {
                    _ = try initiator.readMessage(second)
                    var third = try initiator.writeMessage()
                    third[position] ^= 0x01
                    peer.sendFrame(third)
                }
                #expect(peer.waitForClose())
            }
        }
        await echo.waitUntil { echo.failures.withLockedValue { $0.count } >= 10 }
        #expect(echo.failures.withLockedValue { $0.filter { $0 == .noise(.decryptionFailed) }.count } == 10)
        #expect(echo.accepted.withLockedValue { $0 } == 0)
    }

    @Test func flippedTransportBytesCloseTheConnectionAndAreNotDelivered() async throws {
        let echo = try await Fixtures.EchoServer()
        defer { Task { await echo.close() } }
        // The server reads an authenticated connection once its echo task takes it, which the
        // loaded test run's cooperative threads can delay for a long time.
        let peer = try RawPeer(port: echo.port, readTimeout: 300)
        let transport = try peer.handshake(staticKey: Fixtures.clientKey)
        peer.sendFrame(try transport.writeMessage(Data([0x01]) + Data("first".utf8)))
        var flipped = try transport.writeMessage(Data([0x01]) + Data("second".utf8))
        flipped[3] ^= 0x80
        peer.sendFrame(flipped)
        peer.sendFrame(try transport.writeMessage(Data([0x01]) + Data("third".utf8)))
        // The server closes at the altered message ("first" may or may not be echoed before that).
        #expect(peer.waitForClose())
        // The echo task ends with the inbound sequence's typed error (whether or not the echo of
        // "first" was written before the close).
        await echo.waitUntil { echo.taskErrors.withLockedValue { $0 } > 0 }
        #expect(echo.inboundErrors.withLockedValue { $0 } == [.noise(.decryptionFailed)])
        #expect(echo.received.withLockedValue { $0 } == [ByteBuffer(string: "first")])
        #expect(try await Fixtures.echo(ByteBuffer(string: "next"), port: echo.port) == ByteBuffer(string: "next"))
    }

    /// Frames cut across socket reads everywhere that matters: inside the length bytes, right
    /// after them, inside a message, at a frame boundary; and several frames in one read. The
    /// decoder must pass on exactly the frames that were sent (the echo proves it).
    @Test(.hangBackstop) func framesSplitAcrossReadsAreReassembled() async throws {
        let echo = try await Fixtures.EchoServer()
        defer { Task { await echo.close() } }
        let configuration = SecureChannel.Configuration()
        let port = echo.port
        // The raw socket blocks (pauses between pieces, waits for replies): off the cooperative pool,
        // which the echo server's tasks need to answer.
        let replies = try await TestSupport.onOwnThread { () throws -> [Data] in
            let peer = try RawPeer(port: port, readTimeout: 300)
            /// Sends `bytes` in pieces cut at `cuts`, pausing so each piece arrives in a read of its own.
            func send(_ bytes: Data, cuttingAt cuts: [Int]) {
                var start = 0
                for cut in cuts + [bytes.count] {
                    peer.send(bytes[start..<cut])
                    start = cut
                    usleep(30_000)
                }
            }
            let initiator = try Noise.HandshakeState(
                protocolName: configuration.protocolName, role: .initiator, prologue: configuration.prologue,
                staticKey: Fixtures.clientKey)
            send(RawPeer.framed(try initiator.writeMessage()), cuttingAt: [1])
            guard let second = peer.receiveFrame() else { return [] }
            _ = try initiator.readMessage(second)
            send(RawPeer.framed(try initiator.writeMessage()), cuttingAt: [2])
            let transport = try initiator.transportState()
            let big = Self.splitTestPayload
            let first = RawPeer.framed(try transport.writeMessage(Data([0x01]) + Data("first".utf8)))
            let bigHead = RawPeer.framed(try transport.writeMessage(Data([0x00]) + big.prefix(65_518)))
            let bigTail = RawPeer.framed(try transport.writeMessage(Data([0x01]) + big.dropFirst(65_518)))
            let last = RawPeer.framed(try transport.writeMessage(Data([0x01]) + Data("last".utf8)))
            let stream = first + bigHead + bigTail + last
            let a = first.count, b = a + bigHead.count, c = b + bigTail.count
            send(stream, cuttingAt: [a + 1, a + 2, a + 30_000, b, b + 1, c - 5])
            var replies = [Data]()
            var pending = Data()
            while replies.count < 3, let frame = peer.receiveFrame() {
                let plaintext = try transport.readMessage(frame)
                pending += plaintext.dropFirst()
                if plaintext.first == 0x01 {
                    replies.append(pending)
                    pending = Data()
                }
            }
            return replies
        }
        #expect(replies == [Data("first".utf8), Self.splitTestPayload, Data("last".utf8)])
        #expect(echo.failures.withLockedValue { $0.isEmpty })
    }

    static let splitTestPayload = Data((0..<80_000).map { UInt8(truncatingIfNeeded: $0 * 13) })

    @Test func handshakesInProgressAreBoundedAndTheOldestIsEvicted() async throws {
        var bounded = SecureChannel.Configuration()
        bounded.maxHandshakesInProgress = 2
        // Far longer than the test: on a loaded machine (the whole suite on two cores) the test's
        // task can wait a minute for a thread, and the silent handshakes must still be in progress.
        bounded.handshakeTimeout = .seconds(3600)
        bounded.firstMessageTimeout = .seconds(3600)
        let echo = try await Fixtures.EchoServer(configuration: bounded)
        defer { Task { await echo.close() } }
        let oldest = try RawPeer(port: echo.port)
        await echo.waitUntil { echo.server.handshakesInProgress == 1 }
        var silent = [try RawPeer(port: echo.port)]
        await echo.waitUntil { echo.server.handshakesInProgress == 2 }
        #expect(echo.server.handshakesInProgress == 2)
        // A third connection takes the oldest one's slot: the oldest is closed, the new one admitted.
        silent.append(try RawPeer(port: echo.port))
        #expect(oldest.waitForClose(), "the oldest handshake was evicted")
        #expect(echo.failures.withLockedValue { $0.first } == .tooManyHandshakes)
        #expect(echo.server.handshakesInProgress == 2)
        // An honest client is served although every slot is held by a silent socket.
        #expect(try await Fixtures.echo(ByteBuffer(string: "evicts an idle one"), port: echo.port) == ByteBuffer(string: "evicts an idle one"))
        silent.removeAll()
        await echo.waitUntil { echo.server.handshakesInProgress == 0 }
        #expect(try await Fixtures.echo(ByteBuffer(string: "room again"), port: echo.port) == ByteBuffer(string: "room again"))
    }

    /// Issue 21: idle sockets denied service (1,000 idle sockets: 0 of 3 honest clients served).
    /// With 64 slots, 300 sockets that never speak (the 1,000-socket flood is measured in
    /// Benchmarks/channel), then every honest client is served while they stay open; and a socket
    /// that never speaks is closed after `firstMessageTimeout`.
    @Test(.hangBackstop) func idleSocketsDoNotDenyService() async throws {
        // The deadline applies to the honest clients too: long enough for one whose event loop lags.
        var configuration = SecureChannel.Configuration()
        configuration.firstMessageTimeout = .seconds(5)
        let echo = try await Fixtures.EchoServer(configuration: configuration)
        defer { Task { await echo.close() } }
        let flood = try await TestSupport.onOwnThread { try (0..<300).map { _ in try RawPeer(port: echo.port, readTimeout: 120) } }
        var served = 0
        for index in 0..<20 {
            let message = ByteBuffer(string: "honest \(index)")
            if try await Fixtures.echo(message, port: echo.port) == message { served += 1 }
        }
        #expect(served == 20)
        // Every idle socket is closed by the server: evicted, or silent past its first-message deadline.
        let closed = try await TestSupport.onOwnThread { flood.filter { $0.waitForClose() }.count }
        #expect(closed == flood.count)
    }

    @Test func trustOnFirstUseStoresThePartnerKeyThenPinsIt() async throws {
        let directory = try TestSupport.temporaryDirectory("sf-channel")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keychain = try Keychain(path: directory.appendingPathComponent("keychain.db").path, configuration: .immediate)
        let store = KeyStore(keychain: keychain)
        let sealer = try KeyItemSealer(key: SecretBytes.random(count: 32))
        // The client's own key pair comes from the store by tag.
        try store.storeKeyPair(.x25519(Fixtures.clientKey), tag: "me", sealer: sealer)
        let myKey = try SecureChannel.staticKey(tag: "me", in: store, sealer: sealer)
        #expect(myKey.publicKey.rawRepresentation == Fixtures.clientKey.publicKey.rawRepresentation)
        try store.storeKeyPair(.ed25519(Curve25519.Signing.PrivateKey()), tag: "signing", sealer: sealer)
        #expect(throws: SecureChannelError.notAnX25519Key(tag: "signing", type: .ed25519)) {
            try SecureChannel.staticKey(tag: "signing", in: store, sealer: sealer)
        }

        let echo = try await Fixtures.EchoServer()
        defer { Task { await echo.close() } }
        // A refused first use stores nothing.
        await #expect(throws: SecureChannelError.peerRejected(actual: SecureChannel.fingerprint(of: Fixtures.serverKey.publicKey))) {
            _ = try await SecureChannel.Client.connect(
                host: "127.0.0.1", port: echo.port, staticKey: myKey,
                peer: .trustOnFirstUse(tag: "server", in: store, sealer: sealer, confirm: { _ in false }))
        }
        #expect(throws: KeyStoreError.keyNotFound(tag: "server")) { try store.publicKey(tag: "server") }
        // First use: accepted and stored, and the connection says so (nothing verified the key).
        let first = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: echo.port, staticKey: myKey, peer: .trustOnFirstUse(tag: "server", in: store, sealer: sealer))
        #expect(first.isPeerKeyNewlyTrusted)
        #expect(try store.publicKey(tag: "server").fingerprint == SecureChannel.fingerprint(of: Fixtures.serverKey.publicKey))
        // The next connection under the same tag checks the key against the stored one.
        let second = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: echo.port, staticKey: myKey, peer: .trustOnFirstUse(tag: "server", in: store, sealer: sealer))
        #expect(!second.isPeerKeyNewlyTrusted)
        // Later uses are pinned: the same tag now refuses another server.
        let impostor = try await SecureChannel.Server.bind(
            host: "127.0.0.1", port: 0, staticKey: Curve25519.KeyAgreement.PrivateKey(), peer: .anyAuthenticatedKey)
        defer { Task { await impostor.close() } }
        await #expect(throws: SecureChannelError.self) {
            _ = try await SecureChannel.Client.connect(
                host: "127.0.0.1", port: impostor.port, staticKey: myKey, peer: .trustOnFirstUse(tag: "server", in: store, sealer: sealer))
        }
        let pinned = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: echo.port, staticKey: myKey, peer: try .pinned(tag: "server", in: store, sealer: sealer))
        #expect(!pinned.isPeerKeyNewlyTrusted)
        // The stored key is sealed: the vault authenticates it.
        #expect(try store.verifiedPublicKey(tag: "server", sealer: sealer).fingerprint == SecureChannel.fingerprint(of: Fixtures.serverKey.publicKey))
    }

    /// A key trusted by tag is read through the sealer: whoever can write the keychain file but
    /// lacks the vault can neither swap the key nor plant one of their own.
    @Test func keysTrustedByTagAreAuthenticatedByTheSealer() async throws {
        let directory = try TestSupport.temporaryDirectory("sf-channel")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keychain = try Keychain(path: directory.appendingPathComponent("keychain.db").path, configuration: .immediate)
        let store = KeyStore(keychain: keychain)
        let sealer = try KeyItemSealer(key: SecretBytes.random(count: 32))
        let server = AsymmetricPublicKey.x25519(Fixtures.serverKey.publicKey)
        let intruder = AsymmetricPublicKey.x25519(Curve25519.KeyAgreement.PrivateKey().publicKey)
        // Planted without the sealer: refused for pinning, and it blocks trust on first use.
        try store.storePartnerKey(intruder, tag: "planted")
        #expect(throws: KeyStoreError.unauthenticatedKey(tag: "planted")) { try SecureChannel.PeerTrust.pinned(tag: "planted", in: store, sealer: sealer) }
        let echo = try await Fixtures.EchoServer()
        defer { Task { await echo.close() } }
        await #expect(throws: SecureChannelError.keyStoreFailed(.unauthenticatedKey(tag: "planted"))) {
            _ = try await SecureChannel.Client.connect(
                host: "127.0.0.1", port: echo.port, staticKey: Fixtures.clientKey, peer: .trustOnFirstUse(tag: "planted", in: store, sealer: sealer))
        }
        // Imported with the sealer, then its clear public item swapped in the file.
        try store.storePartnerKey(server, tag: "server", sealer: sealer)
        _ = try SecureChannel.PeerTrust.pinned(tag: "server", in: store, sealer: sealer)
        try keychain.replace([
            Keychain.NewItem(identity: KeychainItem.Identity(.key, service: KeyStore.service, account: "server"), value: intruder.spkiDERRepresentation)
        ])
        #expect(throws: KeyStoreError.publicKeyMismatch(tag: "server")) { try SecureChannel.PeerTrust.pinned(tag: "server", in: store, sealer: sealer) }
        await #expect(throws: SecureChannelError.keyStoreFailed(.publicKeyMismatch(tag: "server"))) {
            _ = try await SecureChannel.Client.connect(
                host: "127.0.0.1", port: echo.port, staticKey: Fixtures.clientKey, peer: .trustOnFirstUse(tag: "server", in: store, sealer: sealer))
        }
    }

    /// A sealer that counts its opens: each is a KDF run with a passphrase sealer.
    final class CountingSealer: ItemSealer {
        let base: KeyItemSealer
        let opens = NIOLockedValueBox(0)
        init() throws { base = try KeyItemSealer(key: SecretBytes.random(count: 32)) }
        func seal(_ plaintext: Data, context: Data) throws(SecureCoreError) -> Data { try base.seal(plaintext, context: context) }
        func open(_ sealed: Data, context: Data) throws(SecureCoreError) -> Data {
            opens.withLockedValue { $0 += 1 }
            return try base.open(sealed, context: context)
        }
    }

    /// Trust on first use reads the stored key through the sealer once per policy, not once per
    /// connection (with a passphrase sealer each read is a KDF run, on the event loop), and an XX
    /// server does not read the store at all before its peer has proved a key.
    @Test func trustOnFirstUseOpensTheStoredKeyOnce() async throws {
        let directory = try TestSupport.temporaryDirectory("sf-channel")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keychain = try Keychain(path: directory.appendingPathComponent("keychain.db").path, configuration: .immediate)
        let store = KeyStore(keychain: keychain)
        let sealer = try CountingSealer()
        try store.storePartnerKey(.x25519(Fixtures.clientKey.publicKey), tag: "client", sealer: sealer)
        let echo = try await Fixtures.EchoServer(peer: .trustOnFirstUse(tag: "client", in: store, sealer: sealer))
        defer { Task { await echo.close() } }
        let before = sealer.opens.withLockedValue { $0 }
        for index in 0..<3 {
            let message = ByteBuffer(string: "pinned \(index)")
            #expect(try await Fixtures.echo(message, port: echo.port) == message)
        }
        #expect(sealer.opens.withLockedValue { $0 } - before <= 1, "the stored key was opened for each connection")
        // A silent connection costs the store nothing: it is closed at its first-message deadline.
        let opened = sealer.opens.withLockedValue { $0 }
        let port = echo.port
        #expect(try await TestSupport.onOwnThread { try RawPeer(port: port, readTimeout: 300).waitForClose() })
        #expect(sealer.opens.withLockedValue { $0 } == opened)
    }

    /// Two first connections under one tag race: the one that stores second finds the key stored
    /// (here by `confirm`, between its check and its store) and is accepted only if it is its peer's.
    @Test func trustOnFirstUseRaceAcceptsOnlyTheSameKey() async throws {
        let directory = try TestSupport.temporaryDirectory("sf-channel")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keychain = try Keychain(path: directory.appendingPathComponent("keychain.db").path, configuration: .immediate)
        let store = KeyStore(keychain: keychain)
        let sealer = try KeyItemSealer(key: SecretBytes.random(count: 32))
        let echo = try await Fixtures.EchoServer()
        defer { Task { await echo.close() } }
        let serverKey = AsymmetricPublicKey.x25519(Fixtures.serverKey.publicKey)
        let other = AsymmetricPublicKey.x25519(Curve25519.KeyAgreement.PrivateKey().publicKey)
        // The other connection stored the same key: this one goes on.
        _ = try await SecureChannel.Client.connect(
            host: "127.0.0.1", port: echo.port, staticKey: Fixtures.clientKey,
            peer: .trustOnFirstUse(tag: "same", in: store, sealer: sealer, confirm: { _ in
                (try? store.storePartnerKey(serverKey, tag: "same", sealer: sealer)) != nil
            }))
        // It stored another key: this one is refused, and the stored key stays.
        await #expect(throws: SecureChannelError.peerKeyMismatch(expected: other.fingerprint.description, actual: serverKey.fingerprint)) {
            _ = try await SecureChannel.Client.connect(
                host: "127.0.0.1", port: echo.port, staticKey: Fixtures.clientKey,
                peer: .trustOnFirstUse(tag: "other", in: store, sealer: sealer, confirm: { _ in
                    (try? store.storePartnerKey(other, tag: "other", sealer: sealer)) != nil
                }))
        }
        #expect(try store.verifiedPublicKey(tag: "other", sealer: sealer).fingerprint == other.fingerprint)
    }
}
