#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation
import SecureChannel
import SFTestSupport

/// A blocking TCP client on 127.0.0.1 for playing a misbehaving peer byte by byte. Reads time
/// out (after 10 seconds unless told otherwise) so a test can never hang.
final class RawPeer: @unchecked Sendable {  // each test uses one from one thread at a time
    private let fd: Int32

    /// Connects to `port`; each read gives up after `readTimeout` seconds. A test that waits for
    /// the echo server's replies (Swift tasks, which the loaded test run's busy cooperative threads
    /// can delay for a long time) passes a longer one. `receiveBuffer` fixes the socket's receive
    /// buffer (the kernel's autotuning off), so the peer's reading paces the sender closely.
    init(port: Int, readTimeout: Int = 10, receiveBuffer: Int32? = nil) throws {
        #if canImport(Glibc)
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        var timeout = timeval(tv_sec: readTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    /// Wraps an accepted socket (`RawListener.accept`).
    fileprivate init(accepted fd: Int32, readTimeout: Int) {
        self.fd = fd
        var timeout = timeval(tv_sec: readTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: Data) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let sent = Foundation.send(fd, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                if sent <= 0 { return }
                offset += sent
            }
        }
    }

    /// `message` as one frame: its 2-byte big-endian length, then the message.
    static func framed(_ message: Data) -> Data {
        Data([UInt8(message.count >> 8), UInt8(message.count & 0xFF)]) + message
    }

    func sendFrame(_ message: Data) {
        send(Self.framed(message))
    }

    /// Exactly `count` bytes, or nil when the connection ends (or times out) first.
    func receive(_ count: Int) -> Data? {
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: max(count, 1))
        while data.count < count {
            let got = recv(fd, &chunk, count - data.count, 0)
            if got <= 0 { return nil }
            data.append(contentsOf: chunk[0..<got])
        }
        return data
    }

    func receiveFrame() -> Data? {
        guard let header = receive(2) else { return nil }
        return receive(Int(header[0]) << 8 | Int(header[1]))
    }

    /// True when the server closed the connection (a read ends with EOF or a reset).
    func waitForClose() -> Bool {
        var byte: UInt8 = 0
        while true {
            let got = recv(fd, &byte, 1, 0)
            if got == 0 { return true }
            if got < 0 { return errno == ECONNRESET }
        }
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Runs the default XX handshake as the client with `staticKey` (each message one frame) and
    /// returns the transport state: the peer then speaks the channel's framing by hand. The bytes
    /// `following` makes with it go out in the same write as the last handshake message.
    func handshake(
        staticKey: Curve25519.KeyAgreement.PrivateKey, following: (Noise.TransportState) throws -> Data = { _ in Data() }
    ) throws -> Noise.TransportState {
        let configuration = SecureChannel.Configuration()
        let initiator = try Noise.HandshakeState(
            protocolName: configuration.protocolName, role: .initiator, prologue: configuration.prologue, staticKey: staticKey)
        sendFrame(try initiator.writeMessage())
        guard let answer = receiveFrame() else { throw SecureChannelError.connectionClosedDuringHandshake }
        _ = try initiator.readMessage(answer)
        let last = try initiator.writeMessage()
        let transport = try initiator.transportState()
        send(Self.framed(last) + (try following(transport)))
        return transport
    }
}

/// A blocking TCP listener on 127.0.0.1 (a free port) for playing a misbehaving server.
final class RawListener: @unchecked Sendable {  // accepted from one thread at a time
    private let fd: Int32
    /// The port it listens on.
    let port: Int

    init() throws {
        (fd, port) = try TestSupport.loopbackSocket(listening: true, port: 0)
    }

    deinit { close(fd) }

    /// The next connection (blocking), its reads giving up after `readTimeout` seconds.
    func accept(readTimeout: Int = 60) throws -> RawPeer {
        #if canImport(Glibc)
        let client = Glibc.accept(fd, nil, nil)
        #else
        let client = Darwin.accept(fd, nil, nil)
        #endif
        guard client >= 0 else { throw POSIXError(.ECONNABORTED) }
        return RawPeer(accepted: client, readTimeout: readTimeout)
    }
}
