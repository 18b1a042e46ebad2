/// A bounded cache of records heard from the network, and the assembly of resolved instances from
/// it (RFC 6763 §4–§6). Every record is untrusted; the cache only bounds how much memory hostile
/// traffic can take (`maximumRecords`, the record inserted longest ago evicted first) and honours
/// TTLs, goodbyes (TTL 0) and the cache-flush bit of unique records (RFC 6762 §10.1, §10.2; a PTR,
/// a shared record, never flushes others, whatever bit it carries).
public struct DiscoveryCache: Sendable {
    /// The most records kept; beyond it the record inserted longest ago is evicted (not the one
    /// closest to expiry: records with huge TTLs would then stay, and each record of a real
    /// response would evict the one before it).
    public static let maximumRecords = 512

    private struct Key: Hashable {
        let name: DNSName
        let data: DNSRecordData
    }

    /// The records of one name and type: what a cache-flush record replaces and what lookups ask for.
    private struct RecordSetKey: Hashable {
        let name: DNSName
        let type: DNSRecordType
    }

    private struct RecordSet {
        var keys = Set<Key>()
        /// No member was received before this (it may be earlier than the oldest member: it is
        /// recomputed only when a cache-flush record looks for stale members).
        var oldestReceived: ContinuousClock.Instant
    }

    private struct Entry {
        let record: DNSResourceRecord
        let received: ContinuousClock.Instant
        let expires: ContinuousClock.Instant
        /// Its place in `arrivals`: an arrival that is not its entry's is a record since renewed or removed.
        let arrival: UInt64
    }

    // Every record a hostile response brings costs O(1) here, whatever the cache holds: the
    // records are indexed by name and type, and the eviction order is kept as it goes.
    private var entries = [Key: Entry]()
    private var recordSets = [RecordSetKey: RecordSet]()
    private var arrivals = [(key: Key, arrival: UInt64)]()
    private var oldestArrival = 0
    private var nextArrival: UInt64 = 0

    /// An empty cache.
    public init() {}

    /// The number of records held.
    public var count: Int { entries.count }

    /// Adds the records of a response received at `now`, each with its `effectiveTTL`.
    public mutating func insert(_ records: [DNSResourceRecord], now: ContinuousClock.Instant) {
        expire(now: now)
        for var record in records where record.recordClass == .internet {
            record.ttl = record.effectiveTTL
            let key = Key(name: record.name, data: record.data)
            if record.ttl == 0 {
                // A goodbye: the record goes one second later, not at once (RFC 6762 §10.1), so
                // that another responder holding it can rescue it meanwhile (its answer renews it).
                // Until then it is still an answer, with a TTL of 1 as the RFC puts it.
                if let held = entries[key] {
                    entries[key] = Entry(
                        record: held.record, received: held.received, expires: min(held.expires, now + .seconds(1)), arrival: held.arrival)
                }
                continue
            }
            // RFC 6762 §10.2: the bit belongs to unique records only. Every instance of a type has
            // a PTR under the type's name, so one PTR carrying it must not remove the others.
            if record.cacheFlush, record.type != .ptr {
                removeStale(RecordSetKey(name: record.name, type: record.type), now: now)
            }
            if entries[key] == nil, entries.count >= Self.maximumRecords {
                evictOldest()
            }
            store(record, for: key, received: now)
        }
    }

    /// Removes the records of `setKey` received more than a second before `now` (a cache-flush
    /// record's meaning). A set is looked through only when it may hold such a record, so a
    /// response of many records for one name and type costs one pass, not one per record.
    private mutating func removeStale(_ setKey: RecordSetKey, now: ContinuousClock.Instant) {
        guard let set = recordSets[setKey], now - set.oldestReceived > .seconds(1) else { return }
        for key in set.keys {
            if let entry = entries[key], now - entry.received > .seconds(1) { remove(key) }
        }
        guard let kept = recordSets[setKey]?.keys else { return }
        recordSets[setKey]?.oldestReceived = kept.compactMap { entries[$0]?.received }.min() ?? now
    }

    private mutating func store(_ record: DNSResourceRecord, for key: Key, received: ContinuousClock.Instant) {
        entries[key] = Entry(record: record, received: received, expires: received + .seconds(Int64(record.ttl)), arrival: nextArrival)
        func join(_ set: inout RecordSet) {
            set.keys.insert(key)
            set.oldestReceived = min(set.oldestReceived, received)
        }
        join(&recordSets[RecordSetKey(name: key.name, type: record.type), default: RecordSet(oldestReceived: received)])
        arrivals.append((key, nextArrival))
        nextArrival += 1
        // Renewed and removed records leave their arrivals behind; dropping them once there are
        // four times as many as the cache can hold keeps the work per record constant.
        if arrivals.count >= 4 * Self.maximumRecords {
            arrivals = arrivals[oldestArrival...].filter { entries[$0.key]?.arrival == $0.arrival }
            oldestArrival = 0
        }
    }

    private mutating func remove(_ key: Key) {
        guard let entry = entries.removeValue(forKey: key) else { return }
        let setKey = RecordSetKey(name: key.name, type: entry.record.type)
        recordSets[setKey]?.keys.remove(key)
        if recordSets[setKey]?.keys.isEmpty == true { recordSets[setKey] = nil }
    }

    private mutating func evictOldest() {
        while oldestArrival < arrivals.count {
            let (key, arrival) = arrivals[oldestArrival]
            oldestArrival += 1
            if entries[key]?.arrival == arrival {
                remove(key)
                return
            }
        }
    }

    /// Adds the records of a response received at `now` that can tell about instances of `type`
    /// (or the instances `names`): PTR records of the type, SRV and TXT records of its instances,
    /// and A and AAAA records of the hosts those SRV records (here or already held) name. Others
    /// are not kept, so that records for unrelated names cannot push the browse's own out.
    public mutating func insert(
        _ records: [DNSResourceRecord], now: ContinuousClock.Instant, about type: ServiceType, names: [DNSName] = []
    ) {
        let domain = type.domainName
        func isInstance(_ name: DNSName) -> Bool {
            (name.labels.count == domain.labels.count + 1 && name.hasSuffix(domain)) || names.contains(name)
        }
        var hosts = Set<DNSName>()
        for record in records where isInstance(record.name) {
            if case .srv(let srv) = record.data { hosts.insert(srv.target) }
        }
        for entry in entries.values where isInstance(entry.record.name) {
            if case .srv(let srv) = entry.record.data { hosts.insert(srv.target) }
        }
        insert(records.filter { record in
            switch record.type {
            case .ptr: record.name == domain
            case .srv, .txt: isInstance(record.name)
            case .a, .aaaa: hosts.contains(record.name)
            default: false
            }
        }, now: now)
    }

    /// Drops the records whose TTL has passed (or that said goodbye more than a second ago):
    /// lookups see what the last call left.
    public mutating func expire(now: ContinuousClock.Instant) {
        for key in entries.compactMap({ $0.value.expires <= now ? $0.key : nil }) { remove(key) }
    }

    private func records(named name: DNSName, type: DNSRecordType) -> [DNSResourceRecord] {
        recordSets[RecordSetKey(name: name, type: type)]?.keys.compactMap { entries[$0]?.record } ?? []
    }

    /// The instance names of `type` learned from PTR records, sorted by presentation form.
    public func instanceNames(of type: ServiceType) -> [DNSName] {
        let domain = type.domainName
        return records(named: domain, type: .ptr).compactMap { record -> DNSName? in
            guard case .ptr(let target) = record.data, target.labels.count == domain.labels.count + 1, target.hasSuffix(domain)
            else { return nil }
            return target
        }.sorted { $0.description < $1.description }
    }

    /// The instance named `name` when its SRV, TXT and at least one address are known; nil otherwise.
    public func resolved(_ name: DNSName, type: ServiceType) -> ServiceInstance? {
        guard name.labels.count == type.domainName.labels.count + 1, name.hasSuffix(type.domainName) else { return nil }
        let services = records(named: name, type: .srv).compactMap { record -> SRVData? in
            if case .srv(let srv) = record.data { srv } else { nil }
        }.sorted { ($0.priority, UInt16.max - $0.weight) < ($1.priority, UInt16.max - $1.weight) }
        guard let srv = services.first,
            let txtRecord = records(named: name, type: .txt).first, case .txt(let strings) = txtRecord.data
        else { return nil }
        var addresses = [IPAddress]()
        for record in records(named: srv.target, type: .a) { if case .a(let a) = record.data { addresses.append(.v4(a)) } }
        for record in records(named: srv.target, type: .aaaa) { if case .aaaa(let a) = record.data { addresses.append(.v6(a)) } }
        guard !addresses.isEmpty else { return nil }
        return ServiceInstance(
            name: String(decoding: name.labels[0], as: UTF8.self), type: type, host: srv.target, addresses: addresses,
            port: srv.port, txt: TXTRecord(strings: strings))
    }

    /// Every resolved instance of `type`.
    public func resolvedInstances(of type: ServiceType) -> [ServiceInstance] {
        instanceNames(of: type).compactMap { resolved($0, type: type) }
    }

    /// The questions that would complete what is known about `names`: SRV and TXT of instances,
    /// A and AAAA of their hosts.
    public func missingQuestions(for names: [DNSName], type: ServiceType) -> [DNSQuestion] {
        var questions = [DNSQuestion]()
        for name in names where resolved(name, type: type) == nil {
            let services = records(named: name, type: .srv)
            if services.isEmpty { questions.append(DNSQuestion(name: name, type: .srv)) }
            if records(named: name, type: .txt).isEmpty { questions.append(DNSQuestion(name: name, type: .txt)) }
            for record in services {
                guard case .srv(let srv) = record.data else { continue }
                if records(named: srv.target, type: .a).isEmpty && records(named: srv.target, type: .aaaa).isEmpty {
                    questions.append(DNSQuestion(name: srv.target, type: .a))
                    questions.append(DNSQuestion(name: srv.target, type: .aaaa))
                }
            }
        }
        return Array(questions.prefix(32))
    }
}
