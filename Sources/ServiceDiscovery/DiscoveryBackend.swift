#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which DNS-SD implementation a ``ServiceAdvertiser`` or ``ServiceBrowser`` uses. Both produce
/// the same records and the same ``ServiceInstance`` values; either way, everything discovered is
/// untrusted input that only the SecureChannel handshake can authenticate.
public enum DiscoveryBackend: Hashable, Sendable, CustomStringConvertible {
    #if os(Linux)
    /// This module's own multicast DNS responder and querier on SwiftNIO UDP sockets, pinned to one
    /// interface; needs no daemon (containers, CI). Linux only.
    case builtIn
    #endif
    /// The system's DNS-SD daemon through its C API (`dns_sd.h`), resolved at run time: mDNSResponder
    /// in libSystem on Apple platforms; on Linux, avahi-daemon through Avahi's compatibility library
    /// `libdns_sd.so.1` (Debian: `libavahi-compat-libdnssd1`). When the library or the daemon is
    /// missing, operations throw ``ServiceDiscoveryError/systemDiscoveryUnavailable(_:)`` or
    /// ``ServiceDiscoveryError/systemDaemonUnavailable(_:)``.
    case system

    /// The default of this platform: `.system` on Apple platforms, `.builtIn` on Linux.
    public static var platformDefault: DiscoveryBackend {
        #if os(Linux)
        .builtIn
        #else
        .system
        #endif
    }

    /// Parses `system`, or `builtin` / `built-in` where the built-in backend exists (ASCII case
    /// ignored); nil for anything else.
    public init?(_ name: String) {
        switch name.lowercased() {
        case "system": self = .system
        #if os(Linux)
        case "builtin", "built-in": self = .builtIn
        #endif
        default: return nil
        }
    }

    /// `builtin` or `system`.
    public var description: String {
        switch self {
        #if os(Linux)
        case .builtIn: "builtin"
        #endif
        case .system: "system"
        }
    }

    /// Nil when the system's DNS-SD library can be loaded here; otherwise why not. (The daemon is
    /// only contacted by an operation, which reports ``ServiceDiscoveryError/systemDaemonUnavailable(_:)``.)
    public static var systemUnavailableReason: String? {
        switch SystemDNSServiceLibrary.shared {
        case .success: nil
        case .failure(let error): error.description
        }
    }

    /// The interface index the DNS-SD API takes for `name` (0, every interface, for nil).
    static func interfaceIndex(_ name: String?) throws(ServiceDiscoveryError) -> UInt32 {
        guard let name else { return 0 }
        let index = if_nametoindex(name)
        guard index != 0 else { throw .interfaceNotFound(name) }
        return index
    }
}
