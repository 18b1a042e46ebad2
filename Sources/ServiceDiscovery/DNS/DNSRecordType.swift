/// A DNS resource record type (RFC 1035 §3.2.2 and later registrations). Any 16-bit value can be
/// represented; the constants name the ones DNS-SD uses.
public struct DNSRecordType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The type number on the wire.
    public let rawValue: UInt16

    /// Creates a type from its number.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// IPv4 host address (RFC 1035).
    public static let a = DNSRecordType(rawValue: 1)
    /// Domain name pointer; in DNS-SD, a service type's instances (RFC 1035, RFC 6763 §4.1).
    public static let ptr = DNSRecordType(rawValue: 12)
    /// Text strings; in DNS-SD, key/value attributes (RFC 1035, RFC 6763 §6).
    public static let txt = DNSRecordType(rawValue: 16)
    /// IPv6 host address (RFC 3596).
    public static let aaaa = DNSRecordType(rawValue: 28)
    /// Service location: priority, weight, port and target host (RFC 2782).
    public static let srv = DNSRecordType(rawValue: 33)
    /// Negative-answer bitmap; kept opaque by this codec (RFC 4034, RFC 6762 §6.1).
    public static let nsec = DNSRecordType(rawValue: 47)
    /// The query type matching every record type (RFC 1035 QTYPE `*`).
    public static let any = DNSRecordType(rawValue: 255)

    /// The mnemonic (`PTR`, `SRV`…) or `TYPEnnn` for others (RFC 3597 style).
    public var description: String {
        switch self {
        case .a: "A"
        case .ptr: "PTR"
        case .txt: "TXT"
        case .aaaa: "AAAA"
        case .srv: "SRV"
        case .nsec: "NSEC"
        case .any: "ANY"
        default: "TYPE\(rawValue)"
        }
    }
}

/// A DNS class without the mDNS top bit (which means cache-flush in records and unicast-response in
/// questions, RFC 6762 §10.2 and §5.4). mDNS uses `internet` only.
public struct DNSClass: RawRepresentable, Hashable, Sendable {
    /// The 15-bit class number.
    public let rawValue: UInt16

    /// Creates a class from its number; the top bit is dropped.
    public init(rawValue: UInt16) { self.rawValue = rawValue & 0x7FFF }

    /// The Internet class `IN`.
    public static let internet = DNSClass(rawValue: 1)
    /// The query class matching every class (`*`).
    public static let any = DNSClass(rawValue: 255)
}
