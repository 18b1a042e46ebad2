#if !os(Linux)
#if canImport(Darwin)
import Darwin
#endif

/// Advertises one DNS-SD service instance through the system's DNS-SD daemon (mDNSResponder), the
/// only backend off Linux: `start()` registers it and returns the records as the daemon publishes
/// them, `stop()` withdraws it (the daemon sends the goodbye). The same API as on Linux, where
/// ``DiscoveryBackend/builtIn`` is also available.
public final class ServiceAdvertiser: Sendable {
    private let interface: String?
    private let instance: ServiceInstanceName
    private let type: ServiceType
    private let port: UInt16
    private let txt: TXTRecord
    private let registration: SystemServiceRegistration

    /// Prepares to advertise `instanceName` of `type` at `port` with `txt` on interface `interface`
    /// (nil: every interface), under the daemon's own host name (`hostName` must be nil; otherwise
    /// `invalidHostName`). `backend` must be `.system`; the daemon chooses the IP families, so
    /// `families` (kept for the same call as on Linux) is not used. Nothing is sent until `start()`;
    /// a missing DNS-SD library is `systemDiscoveryUnavailable`.
    public init(
        interface: String? = nil, instanceName: String, type: ServiceType = .secureChannel, port: UInt16, txt: TXTRecord = TXTRecord(),
        hostName: String? = nil, families: IPFamilies = .all, backend: DiscoveryBackend = .platformDefault
    ) throws(ServiceDiscoveryError) {
        guard hostName == nil else { throw .invalidHostName("the system backend publishes the daemon's own host name") }
        self.interface = interface
        self.instance = try ServiceInstanceName(instanceName)
        self.type = type
        self.port = port
        self.txt = txt
        self.registration = SystemServiceRegistration(library: try SystemDNSServiceLibrary.shared.get())
    }

    /// Registers the service and waits for the daemon's confirmation; returns the records as
    /// published (the daemon may have renamed the instance after a conflict). Started at most once.
    @discardableResult
    public func start() async throws(ServiceDiscoveryError) -> ServiceRecords {
        try await registration.start(
            instance: instance, type: type, port: port, txt: txt, interfaceIndex: try DiscoveryBackend.interfaceIndex(interface))
    }

    /// Withdraws the registration. Safe to call more than once.
    public func stop() async {
        await registration.stop()
    }

    /// This machine's host name reduced to a DNS label (letters, digits, hyphens), or `sf-host`.
    static func defaultHostLabel() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "sf-host" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let first = name.split(separator: ".").first.map(String.init) ?? ""
        let label = String(
            first.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") }.prefix(63))
        let trimmed = String(label.drop { $0 == "-" }.reversed().drop { $0 == "-" }.reversed())
        return trimmed.isEmpty ? "sf-host" : trimmed
    }
}

/// Finds DNS-SD instances of one service type through the system's DNS-SD daemon (mDNSResponder),
/// the only backend off Linux; returns the same ``ServiceInstance`` values as on Linux. Everything
/// returned is untrusted input: only the SecureChannel handshake authenticates a peer.
public final class ServiceBrowser: Sendable {
    private let interface: String?
    private let type: ServiceType

    /// A browser for `type` on interface `interface` (nil: every interface). `backend` must be
    /// `.system`; the daemon chooses the IP families, so `families` (kept for the same call as on
    /// Linux) is not used. Nothing is asked until `browse` or `resolve`.
    public init(
        interface: String? = nil, type: ServiceType = .secureChannel, families: IPFamilies = .all, backend: DiscoveryBackend = .platformDefault
    ) {
        self.interface = interface
        self.type = type
    }

    /// Browses for `timeout` and returns every instance resolved by then, sorted by name.
    public func browse(timeout: Duration) async throws(ServiceDiscoveryError) -> [ServiceInstance] {
        try await SystemServiceBrowsing.browse(
            type: type, interfaceIndex: try DiscoveryBackend.interfaceIndex(interface), timeout: timeout,
            library: try SystemDNSServiceLibrary.shared.get())
    }

    /// Browses until the instance named `instanceName` is resolved, or throws `notFound` after `timeout`.
    public func resolve(instanceName: String, timeout: Duration) async throws(ServiceDiscoveryError) -> ServiceInstance {
        try await SystemServiceBrowsing.resolve(
            instanceName: instanceName, type: type, interfaceIndex: try DiscoveryBackend.interfaceIndex(interface), timeout: timeout,
            library: try SystemDNSServiceLibrary.shared.get())
    }
}
#endif
