/// A DNS message (RFC 1035 §4.1) with the multicast DNS conventions of RFC 6762: the top bit of a
/// question's class asks for a unicast response (§5.4), the top bit of a record's class is the
/// cache-flush bit (§10.2).
///
/// `init(parsing:)` reads a message from untrusted bytes: every read is bounds-checked, compression
/// pointers must point strictly backwards (no loops, no forward references), labels and names
/// respect their length limits, and the header's counts must fit the message. A malformed message
/// is one `DNSError`, never a trap or a partial result. `serialized()` writes with name compression.
public struct DNSMessage: Hashable, Sendable {
    /// The largest message this codec reads or writes: 9000 bytes, the mDNS ceiling (RFC 6762 §17).
    public static let maximumSize = 9000

    /// The message ID; zero in multicast DNS except in replies to legacy unicast queries (§18.1).
    public var id: UInt16
    /// The 16-bit flags word (QR, opcode, AA, TC, RD, RA, Z, AD, CD, rcode).
    public var flags: UInt16
    /// The question section.
    public var questions: [DNSQuestion]
    /// The answer section.
    public var answers: [DNSResourceRecord]
    /// The authority section (in mDNS probes, the records being proposed, RFC 6762 §8.2).
    public var authorities: [DNSResourceRecord]
    /// The additional section.
    public var additionals: [DNSResourceRecord]

    /// Creates a message from its parts.
    public init(
        id: UInt16 = 0, flags: UInt16 = 0, questions: [DNSQuestion] = [], answers: [DNSResourceRecord] = [],
        authorities: [DNSResourceRecord] = [], additionals: [DNSResourceRecord] = []
    ) {
        self.id = id
        self.flags = flags
        self.questions = questions
        self.answers = answers
        self.authorities = authorities
        self.additionals = additionals
    }

    /// The flags of an mDNS response: QR and AA set (RFC 6762 §18.2, §18.4).
    public static let responseFlags: UInt16 = 0x8400

    /// True when the QR bit marks the message as a response.
    public var isResponse: Bool { flags & 0x8000 != 0 }
    /// The 4-bit opcode; mDNS uses 0 (standard query) only.
    public var opcode: UInt8 { UInt8((flags >> 11) & 0x0F) }
    /// True when the TC bit is set (in mDNS queries: more known answers follow, RFC 6762 §18.5).
    public var isTruncated: Bool { flags & 0x0200 != 0 }
    /// The 4-bit response code.
    public var responseCode: UInt8 { UInt8(flags & 0x000F) }

    /// All records of the answer, authority and additional sections, in that order.
    public var allRecords: [DNSResourceRecord] { answers + authorities + additionals }
}

/// One entry of the question section.
public struct DNSQuestion: Hashable, Sendable {
    /// The name asked about.
    public var name: DNSName
    /// The type asked for (`DNSRecordType.any` for all).
    public var type: DNSRecordType
    /// The class asked for, without the top bit.
    public var recordClass: DNSClass
    /// The mDNS unicast-response ("QU") bit: the querier prefers a unicast reply (RFC 6762 §5.4).
    public var unicastResponse: Bool

    /// Creates a question; class IN and multicast response by default.
    public init(name: DNSName, type: DNSRecordType, recordClass: DNSClass = .internet, unicastResponse: Bool = false) {
        self.name = name
        self.type = type
        self.recordClass = recordClass
        self.unicastResponse = unicastResponse
    }
}

/// A resource record: owner name, class, cache-flush bit, TTL and typed data.
public struct DNSResourceRecord: Hashable, Sendable {
    /// The owner name.
    public var name: DNSName
    /// The class, without the top bit.
    public var recordClass: DNSClass
    /// The mDNS cache-flush bit: this record set replaces cached ones (RFC 6762 §10.2). Only for
    /// unique records (SRV, TXT, A, AAAA of one host); never on shared PTR records.
    public var cacheFlush: Bool
    /// Time to live in seconds; zero in a goodbye announcement (RFC 6762 §10.1).
    public var ttl: UInt32
    /// The TTL as a cache takes it: one with its top bit set counts as 0, a goodbye (RFC 2181 §8).
    public var effectiveTTL: UInt32 { ttl >= 1 << 31 ? 0 : ttl }
    /// The record data, which also determines the type.
    public var data: DNSRecordData

    /// Creates a record; class IN by default.
    public init(name: DNSName, recordClass: DNSClass = .internet, cacheFlush: Bool = false, ttl: UInt32, data: DNSRecordData) {
        self.name = name
        self.recordClass = recordClass
        self.cacheFlush = cacheFlush
        self.ttl = ttl
        self.data = data
    }

    /// The record type, from the data.
    public var type: DNSRecordType { data.type }
}

/// Record data of the types DNS-SD needs; every other type is kept as opaque bytes.
public enum DNSRecordData: Hashable, Sendable {
    /// An IPv4 address (type A).
    case a(IPv4Address)
    /// An IPv6 address (type AAAA).
    case aaaa(IPv6Address)
    /// A pointer to another name (type PTR).
    case ptr(DNSName)
    /// A service location (type SRV).
    case srv(SRVData)
    /// Character strings, each at most 255 bytes (type TXT); see `TXTRecord` for the DNS-SD meaning.
    case txt([[UInt8]])
    /// Any other type, its data uncompressed exactly as received. (Names inside such data, as in
    /// NSEC, are not decompressed, so this data is only meaningful when the sender did not compress.)
    case opaque(type: DNSRecordType, bytes: [UInt8])

    /// The record type this data belongs to.
    public var type: DNSRecordType {
        switch self {
        case .a: .a
        case .aaaa: .aaaa
        case .ptr: .ptr
        case .srv: .srv
        case .txt: .txt
        case .opaque(let type, _): type
        }
    }
}

/// The data of an SRV record (RFC 2782).
public struct SRVData: Hashable, Sendable {
    /// Lower values are tried first.
    public var priority: UInt16
    /// Relative weight among equal priorities.
    public var weight: UInt16
    /// The service's port.
    public var port: UInt16
    /// The host providing the service; its A/AAAA records give the addresses.
    public var target: DNSName

    /// Creates SRV data.
    public init(priority: UInt16 = 0, weight: UInt16 = 0, port: UInt16, target: DNSName) {
        self.priority = priority
        self.weight = weight
        self.port = port
        self.target = target
    }
}
