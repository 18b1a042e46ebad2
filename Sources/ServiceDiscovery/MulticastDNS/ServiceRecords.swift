/// The records one advertised instance owns (RFC 6763 §4–§6, §9, §12) and the pure logic of a
/// multicast DNS responder for them (RFC 6762 §6–§10): answering queries, probing, announcing,
/// goodbyes and conflict detection. It does no networking, so it is tested alone.
public struct ServiceRecords: Hashable, Sendable {
    /// TTL of records naming a host (SRV, A, AAAA): 120 s (RFC 6762 §10).
    public static let hostRecordTTL: UInt32 = 120
    /// TTL of other records (PTR, TXT): 4500 s (RFC 6762 §10).
    public static let otherRecordTTL: UInt32 = 4500
    /// TTL cap in replies to legacy unicast queries (RFC 6762 §6.7).
    public static let legacyUnicastTTL: UInt32 = 10

    /// The instance's full name, `<instance>._service._proto.local.`.
    public let instanceName: DNSName
    /// The service type.
    public let type: ServiceType
    /// The host name the SRV record targets, `<host>.local.`.
    public let host: DNSName
    /// The service's port.
    public let port: UInt16
    /// The TXT attributes.
    public let txt: TXTRecord
    /// The host's addresses (A and AAAA).
    public private(set) var addresses: [IPAddress]

    /// Builds the record set for `instance` of `type` on `hostLabel.local.` at `port`.
    /// Throws `invalidHostName` for a host label that is not 1 to 63 letters, digits and hyphens.
    public init(
        instance: ServiceInstanceName, type: ServiceType, hostLabel: String, port: UInt16, txt: TXTRecord, addresses: [IPAddress]
    ) throws(ServiceDiscoveryError) {
        let label = Array(hostLabel.utf8)
        guard (1...63).contains(label.count),
            label.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D }),
            label.first != 0x2D, label.last != 0x2D
        else { throw .invalidHostName(hostLabel) }
        self.instanceName = instance.fullName(type: type)
        self.type = type
        self.host = DNSName(unchecked: [label, Array("local".utf8)])
        self.port = port
        self.txt = txt
        self.addresses = addresses.sorted()
    }

    /// The same records with the host's addresses `addresses` (the interface was renumbered).
    func with(addresses: [IPAddress]) -> ServiceRecords {
        var records = self
        records.addresses = addresses.sorted()
        return records
    }

    /// The PTR record from the service type to the instance (shared, no cache-flush).
    public var pointer: DNSResourceRecord {
        DNSResourceRecord(name: type.domainName, ttl: Self.otherRecordTTL, data: .ptr(instanceName))
    }
    /// The service-type enumeration PTR, `_services._dns-sd._udp.local.` → type (RFC 6763 §9).
    public var enumeration: DNSResourceRecord {
        DNSResourceRecord(name: ServiceType.enumerationName, ttl: Self.otherRecordTTL, data: .ptr(type.domainName))
    }
    /// The SRV record (unique, cache-flush).
    public var service: DNSResourceRecord {
        DNSResourceRecord(
            name: instanceName, cacheFlush: true, ttl: Self.hostRecordTTL, data: .srv(SRVData(port: port, target: host)))
    }
    /// The TXT record (unique, cache-flush).
    public var text: DNSResourceRecord {
        DNSResourceRecord(name: instanceName, cacheFlush: true, ttl: Self.otherRecordTTL, data: .txt(txt.strings))
    }
    /// The host's A and AAAA records (unique, cache-flush).
    public var addressRecords: [DNSResourceRecord] {
        addresses.map { address in
            let data: DNSRecordData =
                switch address {
                case .v4(let v4): .a(v4)
                case .v6(let v6): .aaaa(v6)
                }
            return DNSResourceRecord(name: host, cacheFlush: true, ttl: Self.hostRecordTTL, data: data)
        }
    }
    /// Every record, in announcement order.
    public var allRecords: [DNSResourceRecord] { [pointer, service, text] + addressRecords + [enumeration] }

    /// The records a probe proposes in its authority section (RFC 6762 §8.2): the unique ones.
    var uniqueRecords: [DNSResourceRecord] { [service, text] + addressRecords }

    // MARK: Messages

    /// A probe query (RFC 6762 §8.1): questions of type ANY for the instance and host names with the
    /// unicast-response bit, and the proposed records in the authority section.
    public func probe() -> DNSMessage {
        DNSMessage(
            questions: [
                DNSQuestion(name: instanceName, type: .any, unicastResponse: true),
                DNSQuestion(name: host, type: .any, unicastResponse: true),
            ],
            authorities: uniqueRecords)
    }

    /// An unsolicited announcement of every record (RFC 6762 §8.3).
    public func announcement() -> DNSMessage {
        DNSMessage(flags: DNSMessage.responseFlags, answers: allRecords)
    }

    /// The goodbye announcement: every record with TTL zero (RFC 6762 §10.1).
    public func goodbye() -> DNSMessage {
        DNSMessage(flags: DNSMessage.responseFlags, answers: allRecords.map { var r = $0; r.ttl = 0; return r })
    }

    /// The re-announcement after the host's addresses changed to these records' (RFC 6762 §8.4):
    /// every record, and the address records of `removed` with TTL zero (§10.1), so that an
    /// address family left without any address has its old records withdrawn too (a cache-flush
    /// only replaces records of the type it carries).
    func announcement(withdrawing removed: [IPAddress]) -> DNSMessage {
        let goodbyes = with(addresses: removed).addressRecords.map { var r = $0; r.ttl = 0; return r }
        return DNSMessage(flags: DNSMessage.responseFlags, answers: allRecords + goodbyes)
    }

    /// How a response is to be sent.
    public enum Delivery: Hashable, Sendable {
        /// To the multicast group.
        case multicast
        /// Directly to the querier's address and port (QU bit, RFC 6762 §5.4).
        case unicast
        /// To a legacy querier (source port not 5353, RFC 6762 §6.7): unicast, its ID and questions
        /// echoed, TTLs capped, no cache-flush bits.
        case legacyUnicast
    }

    /// The answer to `query`, or nil when it asks for nothing this instance owns.
    ///
    /// Responses are ignored; known answers listed by the querier with at least half their TTL left
    /// are suppressed (RFC 6762 §7.1); additional records follow RFC 6763 §12.
    public func response(to query: DNSMessage, sourcePort: Int) -> (message: DNSMessage, delivery: Delivery)? {
        guard !query.isResponse, query.opcode == 0 else { return nil }
        var answers = [DNSResourceRecord]()
        func add(_ record: DNSResourceRecord) { if !answers.contains(record) { answers.append(record) } }
        for question in query.questions where question.recordClass == .internet || question.recordClass == .any {
            let type = question.type
            let wants = { (candidate: DNSRecordType) in type == .any || type == candidate }
            if question.name == self.type.domainName, wants(.ptr) { add(pointer) }
            if question.name == ServiceType.enumerationName, wants(.ptr) { add(enumeration) }
            if question.name == instanceName {
                if wants(.srv) { add(service) }
                if wants(.txt) { add(text) }
            }
            if question.name == host {
                for record in addressRecords where wants(record.type) { add(record) }
            }
        }
        answers.removeAll { record in
            query.answers.contains { known in
                known.name == record.name && known.data == record.data && known.ttl >= record.ttl / 2
            }
        }
        guard !answers.isEmpty else { return nil }
        var additionals = [DNSResourceRecord]()
        if answers.contains(pointer) { additionals += [service, text] + addressRecords }
        if answers.contains(service) { additionals += addressRecords }
        var seen = Set(answers)
        additionals = additionals.filter { seen.insert($0).inserted }

        if sourcePort != 5353 {
            let cap = { (record: DNSResourceRecord) -> DNSResourceRecord in
                var r = record
                r.ttl = min(r.ttl, Self.legacyUnicastTTL)
                r.cacheFlush = false
                return r
            }
            let message = DNSMessage(
                id: query.id, flags: DNSMessage.responseFlags, questions: query.questions, answers: answers.map(cap),
                additionals: additionals.map(cap))
            return (message, .legacyUnicast)
        }
        let message = DNSMessage(flags: DNSMessage.responseFlags, answers: answers, additionals: additionals)
        let unicast = query.questions.contains { $0.unicastResponse }
        return (message, unicast ? .unicast : .multicast)
    }

    /// How long a responder waits before sending `response` to `query` (RFC 6762 §6), as a range
    /// to draw from uniformly; nil to send at once.
    ///
    /// Unicast and legacy unicast replies, answers to probes (queries with proposed records in the
    /// authority section) and answers made only of unique records (cache-flush set: SRV, TXT, A,
    /// AAAA, which no other responder may also hold) go at once. An answer holding a shared record
    /// (a PTR, which every instance of the type answers) waits 20–120 ms, so that the responses of
    /// several responders do not collide and the responder can aggregate queries arriving meanwhile;
    /// 400–500 ms when the query's TC bit says more known answers follow (RFC 6762 §7.2).
    static func responseDelay(to query: DNSMessage, answers: [DNSResourceRecord], delivery: Delivery) -> ClosedRange<Duration>? {
        guard delivery == .multicast, query.authorities.isEmpty, answers.contains(where: { !$0.cacheFlush }) else { return nil }
        return query.isTruncated ? .milliseconds(400) ... .milliseconds(500) : .milliseconds(20) ... .milliseconds(120)
    }

    /// True when `message` from another responder claims one of this instance's unique names with
    /// different data (RFC 6762 §9), or, for a probe from another host for the same name, when that
    /// host wins the simultaneous-probe tie-break (RFC 6762 §8.2). Messages identical to ours (our
    /// own multicast looped back) are never conflicts.
    public func conflicts(with message: DNSMessage) -> (instance: Bool, host: Bool) {
        conflicts(with: message, alsoOurs: [])
    }

    /// `conflicts(with:)`, where an address record for our host naming one of `alsoOurs` (the
    /// interface's addresses as now read, and those it had until moments ago) is ours too: while
    /// the interface is renumbered, our own earlier answers, or another responder of this host
    /// that read the new addresses first, are not a rival.
    func conflicts(with message: DNSMessage, alsoOurs: Set<IPAddress>) -> (instance: Bool, host: Bool) {
        var instance = false, hostConflict = false
        let ours = Set(uniqueRecords)
        if message.isResponse {
            for record in message.answers + message.additionals where record.ttl > 0 && !ours.contains(where: { $0.data == record.data && $0.name == record.name }) {
                if record.name == instanceName, record.type == .srv || record.type == .txt { instance = true }
                if record.name == host, !Self.names(record.data, oneOf: alsoOurs), record.type == .a || record.type == .aaaa { hostConflict = true }
            }
            return (instance, hostConflict)
        }
        // Each of our names is compared once, however often a probe repeats its question, and the
        // probe's records are sorted out by name once: a crafted probe of hundreds of questions
        // and authority records would otherwise cost questions × records work per packet.
        let probed = Set(message.questions.map(\.name))
        for name in [instanceName, host] where probed.contains(name) {
            let theirs = message.authorities.filter { $0.name == name }
            let mine = uniqueRecords.filter { $0.name == name }
            guard !theirs.isEmpty, !mine.isEmpty else { continue }
            let (theirKeys, myKeys) = (Self.tieBreakKeys(theirs), Self.tieBreakKeys(mine))
            // §8.2.1: the sorted lists compared record by record, the lexicographically later
            // record winning; where one list runs out first, the other wins; identical lists
            // (our own probe) are no rival.
            guard myKeys.lexicographicallyPrecedes(theirKeys, by: { $0.lexicographicallyPrecedes($1) }) else { continue }
            if name == instanceName { instance = true }
            if name == host { hostConflict = true }
        }
        return (instance, hostConflict)
    }

    /// Whether `data` is an A or AAAA record of one of `addresses`.
    static func names(_ data: DNSRecordData, oneOf addresses: Set<IPAddress>) -> Bool {
        switch data {
        case .a(let v4): addresses.contains(.v4(v4))
        case .aaaa(let v6): addresses.contains(.v6(v6))
        default: false
        }
    }

    /// Each record as RFC 6762 §8.2 compares it, in the order §8.2.1 sorts them: its class
    /// (without the cache-flush bit), its type, then its data in uncompressed wire form, without
    /// its length (the longer of two data, one a prefix of the other, is the later); compared
    /// byte by byte, these keys order records as §8.2 does.
    static func tieBreakKeys(_ records: [DNSResourceRecord]) -> [[UInt8]] {
        records.map { record -> [UInt8] in
            var writer = DNSWriter(compressing: false)
            try? writer.writeRecord(DNSResourceRecord(name: .root, recordClass: record.recordClass, ttl: 0, data: record.data))
            let bytes = writer.bytes
            // The root name (1 byte), type (2), class (2), TTL (4), data length (2), data.
            return Array(bytes[3...4]) + Array(bytes[1...2]) + Array(bytes[11...])
        }.sorted { $0.lexicographicallyPrecedes($1) }
    }
}

extension DNSMessage {
    /// Whether a multicast DNS host must silently ignore this message, received from UDP port
    /// `sourcePort`: one with a non-zero opcode or response code (RFC 6762 §18.3, §18.11), or a
    /// response not sent from port 5353 (§6; the only responses from other ports are replies to
    /// legacy queries, which go to the querier's own port, never to 5353).
    func mustBeIgnored(fromPort sourcePort: Int) -> Bool {
        opcode != 0 || responseCode != 0 || (isResponse && sourcePort != 5353)
    }
}
