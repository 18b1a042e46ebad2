#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

extension TestSupport {
    /// A TCP socket on 127.0.0.1: listening on `port` (0: any; a backlog of 16), or connected to
    /// it; with its local port. Throws a `POSIXError` when it cannot be made (nothing is left open).
    public static func loopbackSocket(listening: Bool, port: Int) throws -> (Int32, Int) {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let done = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                (listening ? bind(fd, address, length) == 0 && listen(fd, 16) == 0 : connect(fd, address, length) == 0)
                    && getsockname(fd, address, &length) == 0
            }
        }
        guard done else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
