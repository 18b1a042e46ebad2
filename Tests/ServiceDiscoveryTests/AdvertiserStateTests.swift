import Testing

@testable import ServiceDiscovery

// The built-in responder is Linux only (on Apple platforms the system's mDNSResponder answers).
#if os(Linux)
/// The responder's decisions (`ServiceAdvertiser.State`), fed messages directly: no socket and no
/// network, and every instant is given, so the rate limits are exact.
@Suite("mDNS responder decisions: reply budgets, duplicate suppression, ignored responses")
struct AdvertiserStateTests {
    /// What a decision sends, without the bytes.
    enum Sent: Equatable { case nothing, reply, multicast, pending, reprobe }

    /// What `action` sends.
    static func sent(_ action: ServiceAdvertiser.ReplyAction?) -> Sent {
        switch action {
        case .reply?: .reply
        case .multicast?: .multicast
        case .sendPending?: .pending
        case .reprobe?: .reprobe
        case nil: .nothing
        }
    }

    /// A responder that has announced `ResponderTests.records()`.
    static func announced() throws -> ServiceAdvertiser.State {
        var state = ServiceAdvertiser.State(records: try ResponderTests.records())
        state.phase = .announced
        state.announced = state.records.allRecords
        return state
    }

    /// A datagram's origin on the link: from `address`:`port`, sent to the group unless `toGroup` is false.
    static func origin(_ address: String, port: Int = 5353, family: IPFamilies = .ipv4, toGroup: Bool = true) -> ServiceAdvertiser.Origin {
        ServiceAdvertiser.Origin(family: family, address: address, port: port, toGroup: toGroup, onLink: true, fromUs: false)
    }

    /// Unicast replies had no budget of their own: about 50 QU or legacy queries a second from
    /// one host spent the one multicast answers use, and every other querier went unanswered.
    @Test("a flood of QU and legacy queries from one host spends neither multicast answers nor other hosts' unicast replies")
    func unicastFloodKeepsOthersAnswered() throws {
        var state = try Self.announced()
        let records = state.records
        let start = ContinuousClock.now
        func receive(_ message: DNSMessage, from origin: ServiceAdvertiser.Origin, at now: ContinuousClock.Instant) -> Sent {
            Self.sent(state.receive(message, from: origin, interfaceAddresses: records.addresses, now: now))
        }
        let flooder = "192.0.2.2"
        let srvQU = DNSMessage(questions: [DNSQuestion(name: records.instanceName, type: .srv, unicastResponse: true)])
        let srvLegacy = DNSMessage(id: 7, questions: [DNSQuestion(name: records.instanceName, type: .srv)])
        let ptr = DNSMessage(questions: [DNSQuestion(name: records.type.domainName, type: .ptr)])

        for _ in 0..<ReplyBudget.perSourceBurst { #expect(receive(srvQU, from: Self.origin(flooder), at: start) == .reply) }
        // Past its own budget, a QU question is answered by multicast (RFC 6762 §5.4), once: the
        // SRV was then multicast less than a second ago.
        #expect(receive(srvQU, from: Self.origin(flooder), at: start) == .multicast)
        var answeredInFlood = 0
        for _ in 0..<200 {
            if receive(srvQU, from: Self.origin(flooder), at: start) != .nothing { answeredInFlood += 1 }
            if receive(srvLegacy, from: Self.origin(flooder, port: 40000), at: start) != .nothing { answeredInFlood += 1 }
        }
        #expect(answeredInFlood == 0)
        #expect(state.statistics.rateLimited == 400)

        // Another querier's multicast question is answered (a PTR: after the random delay).
        #expect(receive(ptr, from: Self.origin("192.0.2.3"), at: start) == .pending)
        let due = state.takePending(now: start + .milliseconds(120))
        #expect(due.map { $0.family } == [.ipv4])
        let answer = try #require(due.first)
        #expect(try DNSMessage(parsing: answer.bytes).answers == [records.pointer])
        // Another host's legacy query gets its unicast reply.
        #expect(receive(srvLegacy, from: Self.origin("192.0.2.4", port: 40000), at: start) == .reply)
        // The flooder's budget refills, one reply per 200 ms.
        let later = start + ReplyBudget.perSourceInterval
        #expect(receive(srvLegacy, from: Self.origin(flooder, port: 40000), at: later) == .reply)
        #expect(receive(srvLegacy, from: Self.origin(flooder, port: 40000), at: later) == .nothing)
    }

    /// Per-source buckets alone would let hosts with many addresses reply-flood without bound, and
    /// their map would grow with every source: the overall bucket and `sourcesKept` bound both.
    @Test("unicast replies overall are bounded: past the burst legacy queries get nothing and QU ones multicast; multicast answers stay; sources kept are bounded")
    func unicastBudgetIsBounded() throws {
        var state = try Self.announced()
        let records = state.records
        let start = ContinuousClock.now
        func receive(_ message: DNSMessage, from origin: ServiceAdvertiser.Origin, at now: ContinuousClock.Instant) -> Sent {
            Self.sent(state.receive(message, from: origin, interfaceAddresses: records.addresses, now: now))
        }
        let srvQU = DNSMessage(questions: [DNSQuestion(name: records.instanceName, type: .srv, unicastResponse: true)])
        let srvLegacy = DNSMessage(id: 7, questions: [DNSQuestion(name: records.instanceName, type: .srv)])
        let ptr = DNSMessage(questions: [DNSQuestion(name: records.type.domainName, type: .ptr)])

        // One legacy query from each of 100 hosts at once: the overall burst is replied to.
        var replied = 0
        for host in 0..<100 {
            if receive(srvLegacy, from: Self.origin("192.0.2.\(10 + host)", port: 40000), at: start) == .reply { replied += 1 }
        }
        #expect(replied == ReplyBudget.burst)
        #expect(state.budget.sources.count == ReplyBudget.sourcesKept)
        // A QU question from a host with budget left is answered by multicast instead.
        #expect(receive(srvQU, from: Self.origin("192.0.2.200"), at: start) == .multicast)
        // Multicast answers have a budget of their own.
        #expect(receive(ptr, from: Self.origin("192.0.2.201"), at: start) == .pending)
        // One more unicast reply is earned overall every 50 ms.
        let later = start + ReplyBudget.interval
        #expect(receive(srvLegacy, from: Self.origin("192.0.2.202", port: 40000), at: later) == .reply)
        #expect(receive(srvLegacy, from: Self.origin("192.0.2.203", port: 40000), at: later) == .nothing)
        #expect(state.budget.sources.count == ReplyBudget.sourcesKept)
    }

    /// RFC 6762 §7.4 suppresses an answer that every querier already heard: one multicast to
    /// the group on the same family. A response sent to our address (which reached no other
    /// cache) dropped our multicast answer too.
    @Test("a duplicate of a waiting answer suppresses it only when multicast to the group, on the family it came on (RFC 6762 §7.4)")
    func duplicateSuppression() throws {
        var state = try Self.announced()
        let records = state.records
        let start = ContinuousClock.now
        func receive(_ message: DNSMessage, from origin: ServiceAdvertiser.Origin, at now: ContinuousClock.Instant) -> Sent {
            Self.sent(state.receive(message, from: origin, interfaceAddresses: records.addresses, now: now))
        }
        let ptr = DNSMessage(questions: [DNSQuestion(name: records.type.domainName, type: .ptr)])
        let duplicate = DNSMessage(flags: DNSMessage.responseFlags, answers: [records.pointer])

        // Sent to our address, the same PTR suppresses nothing: our answer still goes.
        #expect(receive(ptr, from: Self.origin("192.0.2.2"), at: start) == .pending)
        #expect(receive(duplicate, from: Self.origin("192.0.2.3", toGroup: false), at: start) == .nothing)
        #expect(state.statistics.duplicatesSuppressed == 0)
        let delivered = state.takePending(now: start + .milliseconds(120))
        #expect(delivered.map { $0.family } == [.ipv4])
        let answer = try #require(delivered.first)
        #expect(try DNSMessage(parsing: answer.bytes).answers == [records.pointer])

        // Multicast to the group, it does.
        let later = start + .seconds(2)
        #expect(receive(ptr, from: Self.origin("192.0.2.2"), at: later) == .pending)
        #expect(receive(duplicate, from: Self.origin("192.0.2.3"), at: later) == .nothing)
        #expect(state.statistics.duplicatesSuppressed == 1)
        #expect(state.takePending(now: later + .milliseconds(120)).isEmpty)

        // Asked on both families and multicast by another responder on IPv6 only: still due on IPv4.
        let latest = start + .seconds(4)
        #expect(receive(ptr, from: Self.origin("192.0.2.2"), at: latest) == .pending)
        #expect(receive(ptr, from: Self.origin("fe80::2", family: .ipv6), at: latest) == .nothing)
        #expect(state.statistics.aggregated == 1)
        #expect(receive(duplicate, from: Self.origin("fe80::3", family: .ipv6), at: latest) == .nothing)
        #expect(state.statistics.duplicatesSuppressed == 2)
        #expect(state.takePending(now: latest + .milliseconds(120)).map { $0.family } == [.ipv4])
        #expect(state.statistics.rateLimited == 0)

        // Our PTR in another class (CHAOS), which no cache keeps for ours, is no duplicate: one
        // such packet after each query hid us from every browser.
        var chaos = records.pointer
        chaos.recordClass = DNSClass(rawValue: 3)
        let afterAll = start + .seconds(6)
        #expect(receive(ptr, from: Self.origin("192.0.2.2"), at: afterAll) == .pending)
        #expect(receive(DNSMessage(flags: DNSMessage.responseFlags, answers: [chaos]), from: Self.origin("192.0.2.3"), at: afterAll) == .nothing)
        #expect(state.statistics.duplicatesSuppressed == 2)
        #expect(state.takePending(now: afterAll + .milliseconds(120)).map { $0.family } == [.ipv4])
    }

    /// Another host's response claiming our instance name for its own SRV (another port and host).
    static func rivalClaim(of records: ServiceRecords) throws -> DNSMessage {
        var rival = records.service
        rival.data = .srv(SRVData(port: 9, target: try DNSName("mallory.local")))
        return DNSMessage(flags: DNSMessage.responseFlags, answers: [rival])
    }

    /// RFC 6762 §6 and §18: a response not sent from port 5353, or with a non-zero opcode or
    /// response code, is silently ignored. Such a claim on our name made the advertiser probe
    /// again (and rename while probing).
    @Test("a response from a port other than 5353, or with a non-zero opcode or rcode, disputes no name (RFC 6762 §6, §18)")
    func ignoredResponsesDisputeNothing() throws {
        let records = try ResponderTests.records()
        let start = ContinuousClock.now
        let claim = try Self.rivalClaim(of: records)
        var refused = claim
        refused.flags |= 3  // NXDOMAIN
        var update = claim
        update.flags |= 5 << 11  // opcode 5, UPDATE
        #expect(!claim.mustBeIgnored(fromPort: 5353))
        #expect(claim.mustBeIgnored(fromPort: 40000) && refused.mustBeIgnored(fromPort: 5353) && update.mustBeIgnored(fromPort: 5353))
        // A query from another port is a legacy query, and is answered.
        #expect(!DNSMessage(questions: [DNSQuestion(name: records.instanceName, type: .srv)]).mustBeIgnored(fromPort: 40000))

        for (message, port) in [(claim, 40000), (refused, 5353), (update, 5353)] {
            var announced = try Self.announced()
            let action = announced.receive(message, from: Self.origin("192.0.2.2", port: port), interfaceAddresses: records.addresses, now: start)
            #expect(Self.sent(action) == .nothing)
            #expect(announced.phase == .announced && announced.statistics.lateConflicts == 0)
            var probing = ServiceAdvertiser.State(records: records)
            probing.phase = .probing
            _ = probing.receive(message, from: Self.origin("192.0.2.2", port: port), interfaceAddresses: records.addresses, now: start)
            #expect(!probing.instanceConflict && !probing.hostConflict)
        }
        // The same claim from port 5353 with rcode 0 is a conflict, announced or probing.
        var announced = try Self.announced()
        let action = announced.receive(claim, from: Self.origin("192.0.2.2"), interfaceAddresses: records.addresses, now: start)
        #expect(Self.sent(action) == .reprobe)
        #expect(announced.phase == .probing && announced.statistics.lateConflicts == 1)
        var probing = ServiceAdvertiser.State(records: records)
        probing.phase = .probing
        _ = probing.receive(claim, from: Self.origin("192.0.2.2"), interfaceAddresses: records.addresses, now: start)
        #expect(probing.instanceConflict)
    }

    /// RFC 6762 §6: a unicast response is accepted only as the answer to a question that asked
    /// for one; the advertiser asks only in its probes. A claim sent from the link to our address
    /// alone, once announced, made it probe again and rename where no other host saw why.
    @Test("a response to our address alone disputes our name only while we probe (RFC 6762 §6)")
    func unsolicitedUnicastResponsesDisputeNothing() throws {
        let records = try ResponderTests.records()
        let start = ContinuousClock.now
        let claim = try Self.rivalClaim(of: records)
        let unicast = Self.origin("192.0.2.2", toGroup: false)

        var announced = try Self.announced()
        #expect(Self.sent(announced.receive(claim, from: unicast, interfaceAddresses: records.addresses, now: start)) == .nothing)
        #expect(announced.phase == .announced && announced.statistics.lateConflicts == 0)
        #expect(announced.statistics.unsolicitedUnicast == 1)
        // A unicast goodbye for our PTR is not corrected either: it reached no cache.
        #expect(Self.sent(announced.receive(Self.response(records.pointer, ttl: 0), from: unicast, interfaceAddresses: records.addresses, now: start)) == .nothing)
        #expect(announced.statistics.unsolicitedUnicast == 2 && announced.statistics.defended == 0)
        // A query sent to our address is no response: it is answered as before.
        let query = DNSMessage(questions: [DNSQuestion(name: records.instanceName, type: .srv)])
        #expect(Self.sent(announced.receive(query, from: unicast, interfaceAddresses: records.addresses, now: start)) != .nothing)

        // While probing, our QU probes ask for unicast answers: such a claim is a conflict.
        var probing = ServiceAdvertiser.State(records: records)
        probing.phase = .probing
        _ = probing.receive(claim, from: unicast, interfaceAddresses: records.addresses, now: start)
        #expect(probing.instanceConflict && probing.statistics.unsolicitedUnicast == 0)
    }

    /// A host probing for one of our names must hear our answer before its three probes (250 ms
    /// apart) end, or it takes the name and, announcing, makes us rename: a QU probe sent to the
    /// group from beyond our subnets went unanswered (RFC 6762 §11: answer it by multicast), and
    /// a probe less than a second after we multicast the records was rate-limited (§6: answers to
    /// probes may go every 250 ms).
    @Test("probes for our names are answered by multicast: from beyond our subnets, and 250 ms after the last answer (RFC 6762 §6, §11)")
    func probesForOurNamesAreAnswered() throws {
        var state = try Self.announced()
        let records = state.records
        let start = ContinuousClock.now
        let probe = DNSMessage(
            questions: [DNSQuestion(name: records.instanceName, type: .any, unicastResponse: true)], authorities: [records.service])
        let offSubnet = ServiceAdvertiser.Origin(family: .ipv4, address: "198.18.77.2", port: 5353, toGroup: true, onLink: false, fromUs: false)
        let answer = try Self.multicast(state.receive(probe, from: offSubnet, interfaceAddresses: records.addresses, now: start))
        #expect(answer?.answers.contains(records.service) == true)
        #expect(state.statistics.offLink == 0)

        // 300 ms later: a query is held back by the once-a-second rule, a probe (asking for a
        // multicast answer, QM) is answered.
        let later = start + .milliseconds(300)
        let query = DNSMessage(questions: [DNSQuestion(name: records.instanceName, type: .srv)])
        #expect(Self.sent(state.receive(query, from: Self.origin("192.0.2.2"), interfaceAddresses: records.addresses, now: later)) == .nothing)
        let multicastProbe = DNSMessage(questions: [DNSQuestion(name: records.instanceName, type: .any)], authorities: [records.service])
        let again = try Self.multicast(state.receive(multicastProbe, from: Self.origin("192.0.2.2"), interfaceAddresses: records.addresses, now: later))
        #expect(again?.answers.contains(records.service) == true)
        // But not more often than every 250 ms.
        let soon = later + .milliseconds(100)
        #expect(Self.sent(state.receive(multicastProbe, from: Self.origin("192.0.2.2"), interfaceAddresses: records.addresses, now: soon)) == .nothing)
        // A legacy query from beyond our subnets still gets nothing.
        let legacy = ServiceAdvertiser.Origin(family: .ipv4, address: "198.18.77.2", port: 40000, toGroup: true, onLink: false, fromUs: false)
        #expect(Self.sent(state.receive(query, from: legacy, interfaceAddresses: records.addresses, now: start + .seconds(5))) == .nothing)
        #expect(state.statistics.offLink == 1)
    }

    /// RFC 6762 §8.2: the loser of a simultaneous probe waits a second and probes again, under
    /// the same name; it renames only when an answer disputes the name. It renamed at once, so one
    /// forged probe with later data renamed us.
    @Test("a lost tie-break defers probing; only an answer that disputes the name is a conflict (RFC 6762 §8.2, §9)")
    func aLostTieBreakIsNoConflict() throws {
        let records = try ResponderTests.records()
        var probing = ServiceAdvertiser.State(records: records)
        probing.phase = .probing
        var later = records.service
        later.data = .srv(SRVData(port: 9000, target: records.host))
        let rivalProbe = DNSMessage(
            questions: [DNSQuestion(name: records.instanceName, type: .any, unicastResponse: true)], authorities: [records.text, later])
        _ = probing.receive(rivalProbe, from: Self.origin("192.0.2.2"), interfaceAddresses: records.addresses, now: .now)
        #expect(probing.instanceTieLost && !probing.instanceConflict)
        _ = probing.receive(try Self.rivalClaim(of: records), from: Self.origin("192.0.2.2"), interfaceAddresses: records.addresses, now: .now)
        #expect(probing.instanceConflict)
    }

    /// The records of the multicast `action` sends, and the families it goes to (nil when it
    /// sends no multicast).
    static func multicast(_ action: ServiceAdvertiser.ReplyAction?) throws -> (answers: [DNSResourceRecord], families: IPFamilies)? {
        guard case .multicast(let bytes, let families)? = action else { return nil }
        return (try DNSMessage(parsing: bytes).answers, families)
    }

    /// `record` as another host multicasts it, with TTL `ttl`.
    static func response(_ record: DNSResourceRecord, ttl: UInt32) -> DNSMessage {
        var copy = record
        copy.ttl = ttl
        return DNSMessage(flags: DNSMessage.responseFlags, answers: [copy])
    }

    /// RFC 6762 §6.6: one spoofed goodbye for our PTR, multicast to the group, removed us from
    /// every cache on the link (a second later) until browsers queried again: the advertiser
    /// said nothing.
    @Test("one of our records multicast with less than half its TTL, a goodbye included, is corrected at once by multicast on its family (RFC 6762 §6.6)")
    func shortTTLsAreCorrected() throws {
        var state = try Self.announced()
        let records = state.records
        let start = ContinuousClock.now
        func receive(_ message: DNSMessage, from origin: ServiceAdvertiser.Origin, at now: ContinuousClock.Instant) -> ServiceAdvertiser.ReplyAction? {
            state.receive(message, from: origin, interfaceAddresses: records.addresses, now: now)
        }

        // A goodbye (TTL 0) for our PTR: the PTR as we announce it (TTL 4500), on IPv4, at once.
        let ptr = try #require(try Self.multicast(receive(Self.response(records.pointer, ttl: 0), from: Self.origin("192.0.2.9"), at: start)))
        #expect(ptr.answers == [records.pointer] && ptr.answers.first?.ttl == ServiceRecords.otherRecordTTL)
        #expect(ptr.families == .ipv4)
        // Our SRV with TTL 1 (less than half of 120), on IPv6: the SRV, cache-flush bit and all, on IPv6.
        let srv = try #require(try Self.multicast(receive(Self.response(records.service, ttl: 1), from: Self.origin("fe80::9", family: .ipv6), at: start)))
        #expect(srv.answers == [records.service] && srv.families == .ipv6)
        #expect(state.statistics.defended == 2 && state.statistics.answered == 0)
        #expect(state.phase == .announced && state.statistics.lateConflicts == 0)

        // A second goodbye within the second: the PTR was just multicast on IPv4 (RFC 6762 §6).
        #expect(Self.sent(receive(Self.response(records.pointer, ttl: 0), from: Self.origin("192.0.2.9"), at: start + .milliseconds(300))) == .nothing)
        #expect(state.statistics.defended == 2 && state.statistics.rateLimited == 1)
        // A second later it is corrected again.
        let again = try Self.multicast(receive(Self.response(records.pointer, ttl: 0), from: Self.origin("192.0.2.9"), at: start + .seconds(1)))
        #expect(again?.answers == [records.pointer])
        #expect(state.statistics.defended == 3)
    }

    @Test("goodbyes and short TTLs for records that are not ours, with other data, or not sent to the group, are not answered")
    func otherShortTTLsAreNotAnswered() throws {
        var state = try Self.announced()
        let records = state.records
        let start = ContinuousClock.now
        let group = Self.origin("192.0.2.9")
        func receive(_ message: DNSMessage, from origin: ServiceAdvertiser.Origin) -> Sent {
            Self.sent(state.receive(message, from: origin, interfaceAddresses: records.addresses, now: start))
        }
        // Another instance of our type says goodbye: its PTR is not ours.
        let other = try ServiceInstanceName("Mallory's Mac").fullName(type: records.type)
        #expect(receive(Self.response(DNSResourceRecord(name: records.type.domainName, ttl: 4500, data: .ptr(other)), ttl: 0), from: group) == .nothing)
        // Our SRV's name and type with other data (another port): a goodbye disputes nothing and
        // asks for nothing.
        var moved = records.service
        moved.data = .srv(SRVData(port: 9, target: records.host))
        #expect(receive(Self.response(moved, ttl: 0), from: group) == .nothing)
        // Our own records with at least half their TTL: nothing to correct.
        #expect(receive(Self.response(records.pointer, ttl: ServiceRecords.otherRecordTTL / 2), from: group) == .nothing)
        #expect(receive(Self.response(records.service, ttl: ServiceRecords.hostRecordTTL), from: group) == .nothing)
        // A goodbye sent to our address reached no cache.
        #expect(receive(Self.response(records.pointer, ttl: 0), from: Self.origin("192.0.2.9", toGroup: false)) == .nothing)
        // Of another class (CHAOS): not our record.
        var chaos = records.text
        chaos.recordClass = DNSClass(rawValue: 3)
        #expect(receive(Self.response(chaos, ttl: 0), from: group) == .nothing)
        #expect(state.statistics.defended == 0 && state.statistics.rateLimited == 0)
        #expect(state.phase == .announced && state.statistics.lateConflicts == 0)

        // While probing, nothing is answered, goodbyes included.
        var probing = ServiceAdvertiser.State(records: records)
        probing.phase = .probing
        probing.announced = records.allRecords
        let action = probing.receive(Self.response(records.pointer, ttl: 0), from: group, interfaceAddresses: records.addresses, now: start)
        #expect(Self.sent(action) == .nothing)
    }
}
#endif
