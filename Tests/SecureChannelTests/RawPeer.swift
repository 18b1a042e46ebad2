#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A blocking TCP client on 127.0.0.1 for playing a misbehaving peer byte by byte. Reads time
/// out (after 10 seconds unless told otherwise) so a test can never hang.
final class RawPeer: @unchecked Sendable {  // each test uses one from one thread at a time
    private let fd: Int32

    /// Connects to `port`; each read gives up after `readTimeout` seconds. A test that waits for
    /// the echo server's replies (Swift tasks, which the loaded test run's busy cooperative threads
    /// can delay for a long time) passes a longer one.
    init(port: Int, readTimeout: Int = 10) throws {
        #if canImport(Glibc)
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        var timeout = timeval(tv_sec: readTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
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

    func sendFrame(_ message: Data) {
        send(Data([UInt8(message.count >> 8), UInt8(message.count & 0xFF)]) + message)
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
}
