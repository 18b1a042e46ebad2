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

    /// The backend that fits this host, for work on `interface` (nil: every interface): the
    /// system's DNS-SD daemon when it answers, so that one responder speaks for the host (on Linux,
    /// avahi-daemon often already answers on port 5353), else, on Linux, the built-in responder.
    /// Asking the daemon starts a browse for `_sf-channel._tcp` on `interface` and stops it at once
    /// (no answer is awaited); a daemon that has not let the browse start within `timeout` (a bus
    /// that accepts and stays silent, a daemon that hangs) counts as absent. On Apple platforms,
    /// always `.system`.
    public static func detected(interface: String?, timeout: Duration = defaultDetectionTimeout) -> DiscoveryBackend {
        #if os(Linux)
        guard case .success(let library) = SystemDNSServiceLibrary.shared, let index = try? interfaceIndex(interface),
            library.daemonAnswers(interfaceIndex: index, within: timeout)
        else { return .builtIn }
        return .system
        #else
        return .system
        #endif
    }

    /// How long ``detected(interface:timeout:)`` waits for the daemon by default: a daemon that
    /// answers does so in milliseconds, even on a loaded host.
    public static let defaultDetectionTimeout: Duration = .seconds(3)

    /// The name that asks for ``detected(interface:timeout:)``, as `sf`'s `--discovery` takes it.
    public static let automaticName = "auto"

    /// The backend a name chooses for work on `interface`: `auto` (ASCII case ignored) or nil is
    /// ``detected(interface:timeout:)`` with its default timeout, any other name as ``init(_:)`` (nil when unknown).
    public static func chosen(_ name: String?, interface: String?) -> DiscoveryBackend? {
        guard let name, name.lowercased() != automaticName else { return detected(interface: interface) }
        return DiscoveryBackend(name)
    }

    /// The interface index the DNS-SD API takes for `name` (0, every interface, for nil).
    static func interfaceIndex(_ name: String?) throws(ServiceDiscoveryError) -> UInt32 {
        guard let name else { return 0 }
        let index = if_nametoindex(name)
        guard index != 0 else { throw .interfaceNotFound(name) }
        return index
    }
}

extension Duration {
    /// The longest any discovery call waits.
    static let longestDiscoveryWait: Duration = .seconds(86_400)

    /// This timeout, between zero and `longestDiscoveryWait`: a longer one (`.seconds(Int64.max)`,
    /// meant as "for ever") counts as a day, so that a deadline made from it stays one the clocks
    /// can represent (the runtime traps converting one beyond about 292 years to nanoseconds).
    var boundedForDiscovery: Duration { min(max(self, .zero), .longestDiscoveryWait) }
}
