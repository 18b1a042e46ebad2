/// A DNS-SD service type such as `_sf-channel._tcp` in the `local.` domain (RFC 6763 §7).
///
/// The service name must be 1 to 15 characters of letters, digits and hyphens, with at least one
/// letter, no hyphen at either end and no two hyphens in a row (RFC 6335 §5.1); the protocol is
/// `_tcp` or `_udp`. Only the multicast DNS domain `local.` is supported.
public struct ServiceType: Hashable, Sendable, CustomStringConvertible {
    /// The service name without its underscore, for example `sf-channel`.
    public let service: String
    /// The transport protocol label without its underscore: `tcp` or `udp`.
    public let transport: String

    /// SecureChannel's service type, `_sf-channel._tcp.local.`.
    public static let secureChannel = try! ServiceType("_sf-channel._tcp")

    /// Parses `_service._tcp`, `_service._udp`, optionally followed by `.local` or `.local.`.
    public init(_ text: String) throws(ServiceDiscoveryError) {
        var parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if parts.last == "" { parts.removeLast() }
        if parts.count == 3 {
            guard parts[2].lowercased() == "local" else { throw .invalidServiceType("only the domain local. is supported: \(text)") }
            parts.removeLast()
        }
        guard parts.count == 2, parts[0].hasPrefix("_"), parts[1].hasPrefix("_") else {
            throw .invalidServiceType("expected _name._tcp or _name._udp, got \"\(text)\"")
        }
        let service = String(parts[0].dropFirst()), transport = String(parts[1].dropFirst()).lowercased()
        guard transport == "tcp" || transport == "udp" else { throw .invalidServiceType("protocol must be _tcp or _udp: \(text)") }
        let scalars = Array(service.unicodeScalars)
        let allowed = scalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") }
        guard (1...15).contains(scalars.count), allowed, scalars.contains(where: { $0.properties.isAlphabetic }),
            scalars.first != "-", scalars.last != "-", !service.contains("--")
        else { throw .invalidServiceType("service name \"\(service)\" must be 1-15 letters, digits or single inner hyphens") }
        self.service = service
        self.transport = transport
    }

    /// The full name browsed for, `_service._proto.local.`.
    public var domainName: DNSName {
        DNSName(unchecked: [Array("_\(service)".utf8), Array("_\(transport)".utf8), Array("local".utf8)])
    }

    /// `_service._proto.local.`
    public var description: String { domainName.description }

    /// The DNS-SD service-type enumeration name, `_services._dns-sd._udp.local.` (RFC 6763 §9).
    public static let enumerationName = DNSName(
        unchecked: [Array("_services".utf8), Array("_dns-sd".utf8), Array("_udp".utf8), Array("local".utf8)])
}

/// The user-visible part of a service instance name (RFC 6763 §4.1.1): any UTF-8 text of 1 to 63
/// bytes without control characters. Dots and backslashes are allowed; they are escaped only in
/// presentation form, never on the wire.
public struct ServiceInstanceName: Hashable, Sendable, CustomStringConvertible {
    /// The instance name as given.
    public let value: String

    /// Validates `value`: 1 to 63 bytes of UTF-8, no code point below U+0020 and no U+007F.
    public init(_ value: String) throws(ServiceDiscoveryError) {
        let count = value.utf8.count
        guard (1...DNSName.maximumLabelLength).contains(count) else {
            throw .invalidInstanceName("\(count) bytes of UTF-8 (must be 1 to 63)")
        }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .invalidInstanceName("contains control characters")
        }
        self.value = value
    }

    /// The full DNS name of this instance of `type`: `<instance>._service._proto.local.`.
    public func fullName(type: ServiceType) -> DNSName {
        DNSName(unchecked: [Array(value.utf8)] + type.domainName.labels)
    }

    /// The instance name as given (not escaped).
    public var description: String { value }
}
