#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as carried in A and AAAA records. The value is only what the network
/// said: discovery results are untrusted and do not prove who is at the address.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// An IPv4 address, four bytes in network order.
    case v4(IPv4Address)
    /// An IPv6 address, sixteen bytes in network order.
    case v6(IPv6Address)

    /// Parses dotted-quad IPv4 or textual IPv6 (`inet_pton`); nil when `text` is neither.
    public init?(_ text: String) {
        if let v4 = IPv4Address(text) { self = .v4(v4) } else if let v6 = IPv6Address(text) { self = .v6(v6) } else { return nil }
    }

    /// The address in its usual textual form.
    public var description: String {
        switch self {
        case .v4(let a): a.description
        case .v6(let a): a.description
        }
    }

    /// The address bytes in network order: 4 for IPv4, 16 for IPv6.
    public var bytes: [UInt8] {
        switch self {
        case .v4(let a): a.bytes
        case .v6(let a): a.bytes
        }
    }

    /// Orders IPv4 before IPv6, then by bytes.
    public static func < (lhs: IPAddress, rhs: IPAddress) -> Bool {
        switch (lhs, rhs) {
        case (.v4(let a), .v4(let b)): a.bytes.lexicographicallyPrecedes(b.bytes)
        case (.v6(let a), .v6(let b)): a.bytes.lexicographicallyPrecedes(b.bytes)
        case (.v4, .v6): true
        case (.v6, .v4): false
        }
    }
}

/// An IPv4 address (four bytes, network order).
public struct IPv4Address: Hashable, Sendable, CustomStringConvertible {
    /// The four bytes in network order.
    public let bytes: [UInt8]

    /// Wraps four bytes; nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 else { return nil }
        self.bytes = bytes
    }

    /// Parses dotted-quad text (`192.0.2.1`); nil when malformed.
    public init?(_ text: String) {
        var raw = in_addr()
        guard inet_pton(AF_INET, text, &raw) == 1 else { return nil }
        self.bytes = withUnsafeBytes(of: &raw) { Array($0) }
    }

    /// Dotted-quad text.
    public var description: String { bytes.map(String.init).joined(separator: ".") }
}

/// An IPv6 address (sixteen bytes, network order).
public struct IPv6Address: Hashable, Sendable, CustomStringConvertible {
    /// The sixteen bytes in network order.
    public let bytes: [UInt8]

    /// Wraps sixteen bytes; nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses textual IPv6 (`fe80::1`); nil when malformed.
    public init?(_ text: String) {
        var raw = in6_addr()
        guard inet_pton(AF_INET6, text, &raw) == 1 else { return nil }
        self.bytes = withUnsafeBytes(of: &raw) { Array($0) }
    }

    /// True for `fe80::/10`, addresses valid only on one link.
    public var isLinkLocal: Bool { bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 }

    /// Canonical text (RFC 5952, as `inet_ntop` writes it).
    public var description: String {
        var raw = in6_addr()
        withUnsafeMutableBytes(of: &raw) { $0.copyBytes(from: bytes) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count)) != nil else { return "::" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The IP families multicast DNS runs on: IPv4 (group 224.0.0.251) and IPv6 (group ff02::fb),
/// both on port 5353 (RFC 6762 §3).
public struct IPFamilies: OptionSet, Hashable, Sendable {
    /// The bits: 1 for IPv4, 2 for IPv6.
    public let rawValue: UInt8

    /// Wraps the bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// IPv4 multicast DNS.
    public static let ipv4 = IPFamilies(rawValue: 1)
    /// IPv6 multicast DNS.
    public static let ipv6 = IPFamilies(rawValue: 2)
    /// Both families.
    public static let all: IPFamilies = [.ipv4, .ipv6]
}
