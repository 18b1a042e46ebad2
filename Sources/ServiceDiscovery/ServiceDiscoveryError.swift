/// Failures of DNS-SD naming, advertising and browsing. Each case names one cause.
public enum ServiceDiscoveryError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The service type is not `_name._tcp` or `_name._udp` with a valid service name (RFC 6763 §7,
    /// RFC 6335 §5.1), or its domain is not `local.`.
    case invalidServiceType(String)
    /// The instance name is empty, longer than 63 bytes of UTF-8, or contains control characters
    /// (RFC 6763 §4.1.1).
    case invalidInstanceName(String)
    /// The host name is not a valid single DNS label (letters, digits, hyphens; 1 to 63 bytes).
    case invalidHostName(String)
    /// No network interface has this name.
    case interfaceNotFound(String)
    /// The interface has no IPv4 address to send multicast from (IPv4 asked for, or both families
    /// asked for and the interface has neither).
    case interfaceHasNoIPv4Address(String)
    /// Only IPv6 was asked for and the interface has no IPv6 address.
    case interfaceHasNoIPv6Address(String)
    /// Opening, configuring or using the multicast socket failed.
    case socket(String)
    /// Another responder on the link already uses the name and every renamed alternative tried.
    case nameConflict(String)
    /// No instance of that name was resolved before the timeout.
    case notFound(String)
    /// The advertiser was already started or stopped.
    case invalidState(String)
    /// This platform has no implementation of the requested backend.
    case unsupportedPlatform
    /// The system's DNS-SD library could not be loaded or lacks a function (`.system` backend).
    case systemDiscoveryUnavailable(String)
    /// The system's DNS-SD daemon could not be reached, or did not answer (`.system` backend).
    case systemDaemonUnavailable(String)
    /// A DNS-SD call failed with this `DNSServiceErrorType` (`.system` backend).
    case systemDiscoveryFailed(operation: String, code: Int32)
    /// The task was cancelled before the operation finished.
    case cancelled

    /// A sentence describing the failure.
    public var description: String {
        switch self {
        case .invalidServiceType(let detail): "invalid DNS-SD service type: \(detail)"
        case .invalidInstanceName(let detail): "invalid DNS-SD instance name: \(detail)"
        case .invalidHostName(let detail): "invalid host name: \(detail)"
        case .interfaceNotFound(let name): "no network interface named \(name)"
        case .interfaceHasNoIPv4Address(let name): "network interface \(name) has no IPv4 address"
        case .interfaceHasNoIPv6Address(let name): "network interface \(name) has no IPv6 address"
        case .socket(let detail): "multicast DNS socket error: \(detail)"
        case .nameConflict(let name): "the name \(name) is already in use on the network"
        case .notFound(let name): "no service instance named \(name) was found"
        case .invalidState(let detail): "invalid state: \(detail)"
        case .unsupportedPlatform: "this service discovery backend is not implemented on this platform"
        case .systemDiscoveryUnavailable(let detail): "the system's DNS-SD is not available: \(detail)"
        case .systemDaemonUnavailable(let detail): "the system's DNS-SD daemon is not available: \(detail)"
        case .systemDiscoveryFailed(let operation, let code): "\(operation) failed with DNS-SD error \(code)"
        case .cancelled: "service discovery was cancelled"
        }
    }
}
