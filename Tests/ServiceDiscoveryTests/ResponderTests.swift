import Testing

@testable import ServiceDiscovery

// The built-in responder is Linux only (on Apple platforms the system's mDNSResponder answers).
#if os(Linux)
@Suite("mDNS responder logic and discovery cache")
struct ResponderTests {
    static func records() throws -> ServiceRecords {
        try ServiceRecords(
            instance: ServiceInstanceName("Alice's Mac"), type: .secureChannel, hostLabel: "alice", port: 4433,
            txt: TXTRecord(["fp": "ab12", "proto": "Noise_XX_25519_ChaChaPoly_SHA256", "v": "1"]),
            addresses: [IPAddress("192.0.2.1")!, IPAddress("fe80::1")!])
    }

    @Test("a PTR query gets the PTR, with SRV, TXT and addresses as additional records")
    func browseAnswer() throws {
        let records = try Self.records()
        let query = DNSMessage(questions: [DNSQuestion(name: ServiceType.secureChannel.domainName, type: .ptr)])
        let (response, delivery) = try #require(records.response(to: query, sourcePort: 5353))
        #expect(delivery == .multicast)
        #expect(response.isResponse && response.id == 0 && response.questions.isEmpty)
        #expect(response.answers == [records.pointer])
        #expect(Set(response.additionals) == Set([records.service, records.text] + records.addressRecords))
        #expect(records.pointer.cacheFlush == false && records.service.cacheFlush && records.text.cacheFlush)
        // The response survives the wire.
        #expect(try DNSMessage(parsing: response.serialized()) == response)
    }

    @Test("SRV, TXT, A, AAAA, ANY and the service enumeration are answered; others are not")
    func otherQuestions() throws {
        let records = try Self.records()
        func answer(_ name: DNSName, _ type: DNSRecordType) -> [DNSResourceRecord]? {
            records.response(to: DNSMessage(questions: [DNSQuestion(name: name, type: type)]), sourcePort: 5353)?.message.answers
        }
        #expect(answer(records.instanceName, .srv) == [records.service])
        #expect(answer(records.instanceName, .txt) == [records.text])
        #expect(answer(records.instanceName, .any) == [records.service, records.text])
        #expect(answer(try DNSName("ALICE.local"), .a)?.map(\.type) == [.a])
        #expect(answer(records.host, .aaaa)?.map(\.type) == [.aaaa])
        #expect(answer(ServiceType.enumerationName, .ptr) == [records.enumeration])
        #expect(answer(try DNSName("bob.local"), .a) == nil)
        #expect(answer(try DNSName("_other._tcp.local"), .ptr) == nil)
        #expect(answer(records.instanceName, .a) == nil)
        // Responses and non-zero opcodes are never answered.
        var response = DNSMessage(flags: 0x8400, questions: [DNSQuestion(name: records.host, type: .a)])
        #expect(records.response(to: response, sourcePort: 5353) == nil)
        response.flags = 0x2800
        #expect(records.response(to: response, sourcePort: 5353) == nil)
    }

    @Test("known answers with at least half their TTL suppress the answer (RFC 6762 §7.1)")
    func knownAnswers() throws {
        let records = try Self.records()
        var known = records.pointer
        known.ttl = 3000
        let suppressed = DNSMessage(questions: [DNSQuestion(name: ServiceType.secureChannel.domainName, type: .ptr)], answers: [known])
        #expect(records.response(to: suppressed, sourcePort: 5353) == nil)
        known.ttl = 100
        let stale = DNSMessage(questions: suppressed.questions, answers: [known])
        #expect(records.response(to: stale, sourcePort: 5353)?.message.answers == [records.pointer])
    }

    @Test("QU questions get unicast; legacy queriers get their ID, questions and capped TTLs")
    func unicast() throws {
        let records = try Self.records()
        let qu = DNSMessage(questions: [DNSQuestion(name: records.host, type: .a, unicastResponse: true)])
        #expect(records.response(to: qu, sourcePort: 5353)?.delivery == .unicast)
        let legacy = DNSMessage(id: 0xBEEF, questions: [DNSQuestion(name: records.instanceName, type: .srv)])
        let (response, delivery) = try #require(records.response(to: legacy, sourcePort: 40000))
        #expect(delivery == .legacyUnicast)
        #expect(response.id == 0xBEEF && response.questions == legacy.questions)
        #expect(response.allRecords.allSatisfy { $0.ttl <= 10 && !$0.cacheFlush })
    }

    @Test("response delay (RFC 6762 §6): shared answers wait 20–120 ms, unique, probe and unicast answers do not")
    func responseDelay() throws {
        let records = try Self.records()
        func delay(_ query: DNSMessage, port: Int = 5353) throws -> ClosedRange<Duration>? {
            let (response, delivery) = try #require(records.response(to: query, sourcePort: port))
            return ServiceRecords.responseDelay(to: query, answers: response.answers, delivery: delivery)
        }
        let ptr = DNSQuestion(name: ServiceType.secureChannel.domainName, type: .ptr)
        #expect(try delay(DNSMessage(questions: [ptr])) == .milliseconds(20) ... .milliseconds(120))
        // A PTR and an SRV asked together: the answer holds a shared record, so it waits.
        #expect(try delay(DNSMessage(questions: [ptr, DNSQuestion(name: records.instanceName, type: .srv)])) == .milliseconds(20) ... .milliseconds(120))
        // More known answers follow (TC): 400–500 ms.
        #expect(try delay(DNSMessage(flags: 0x0200, questions: [ptr])) == .milliseconds(400) ... .milliseconds(500))
        // Unique answers only (SRV, TXT, A, AAAA): at once.
        #expect(try delay(DNSMessage(questions: [DNSQuestion(name: records.instanceName, type: .any)])) == nil)
        #expect(try delay(DNSMessage(questions: [DNSQuestion(name: records.host, type: .a)])) == nil)
        // QU (unicast) and legacy unicast replies: at once, even for a PTR.
        #expect(try delay(DNSMessage(questions: [DNSQuestion(name: ptr.name, type: .ptr, unicastResponse: true)])) == nil)
        #expect(try delay(DNSMessage(questions: [ptr]), port: 40000) == nil)
        // A probe from another host (proposed records in the authority section): at once.
        var probe = records.probe()
        probe.questions = probe.questions.map { var q = $0; q.unicastResponse = false; return q } + [ptr]
        #expect(try delay(probe) == nil)
        // The random draw stays inside the range.
        for _ in 0..<200 {
            let drawn = ServiceAdvertiser.randomDuration(in: .milliseconds(20) ... .milliseconds(120))
            #expect(drawn >= .milliseconds(20) && drawn <= .milliseconds(120))
        }
    }

    @Test("on-link check (RFC 6762 §11): IPv4 subnets, IPv6 prefixes and IPv6 link-local sources")
    func onLink() throws {
        var link = LinkPrefixes()
        link.add(IPAddress("192.0.2.1")!, mask: IPAddress("255.255.255.0")!)
        link.add(IPAddress("2001:db8::1")!, mask: IPAddress("ffff:ffff:ffff:ffff::")!)
        #expect(link.contains(IPAddress("192.0.2.200")!))
        #expect(!link.contains(IPAddress("192.0.3.1")!))
        #expect(!link.contains(IPAddress("198.18.77.2")!))
        // IPv4 link-local sources are on the link whatever the subnets (RFC 3927: never routed).
        #expect(link.contains(IPAddress("169.254.77.2")!))
        #expect(LinkPrefixes().contains(IPAddress("169.254.0.1")!))
        #expect(link.contains(IPAddress("2001:db8::77")!))
        #expect(!link.contains(IPAddress("2001:db8:ffff::2")!))
        #expect(!link.contains(IPAddress("2001:db9::1")!))
        #expect(link.contains(IPAddress("fe80::1234")!))
        #expect(!LinkPrefixes().contains(IPAddress("192.0.2.1")!))
        // A v4 address is never inside a v6 prefix of the same leading bytes, nor the reverse.
        var v4Only = LinkPrefixes()
        v4Only.add(IPAddress("32.1.13.184")!, mask: IPAddress("255.255.255.255")!)
        #expect(!v4Only.contains(IPAddress("2001:db8::")!))
    }

    @Test("IPv6 addresses still tentative or found duplicate (/proc/net/if_inet6 flags) are not ours to announce")
    func unusableIPv6Addresses() throws {
        let text = """
            00000000000000000000000000000001 01 80 10 80       lo
            fe8000000000000000fc00fffe000001 04 40 20 80     eth0
            20010db8000000000000000000000001 04 40 00 c0     eth0
            20010db8000000000000000000000002 04 40 00 88     eth0
            20010db8000000000000000000000003 04 40 00 c4     eth0
            20010db8000000000000000000000004 05 40 00 c0     eth1
            20010db80000000000000000000000zz 04 40 00 c0     eth0
            20010db8000000000000000000000005 04 40
            """
        let unusable = MulticastDNSSocket.parseUnusableIPv6Addresses(text, interfaceIndex: 4)
        // Tentative (0x40) and DAD-failed (0x08) are left out; permanent (0x80) and optimistic
        // (0x04, tentative too while DAD runs) stay; another interface's and lines that do not
        // parse are ignored.
        #expect(unusable == [IPAddress("2001:db8::1")!, IPAddress("2001:db8::2")!])
        #expect(MulticastDNSSocket.parseUnusableIPv6Addresses(text, interfaceIndex: 5) == [IPAddress("2001:db8::4")!])
        #expect(MulticastDNSSocket.parseUnusableIPv6Addresses("", interfaceIndex: 4).isEmpty)
    }

    @Test("probe, announcement and goodbye carry the right records")
    func lifecycleMessages() throws {
        let records = try Self.records()
        let probe = records.probe()
        #expect(!probe.isResponse && probe.questions.allSatisfy { $0.unicastResponse && $0.type == .any })
        #expect(probe.questions.map(\.name) == [records.instanceName, records.host])
        #expect(Set(probe.authorities) == Set([records.service, records.text] + records.addressRecords))
        #expect(records.announcement().answers == records.allRecords)
        #expect(records.goodbye().answers.allSatisfy { $0.ttl == 0 })
        #expect(records.goodbye().answers.count == records.allRecords.count)
    }

    @Test("conflicts: another host's data for our names; our own echo and goodbyes are not conflicts")
    func conflicts() throws {
        let records = try Self.records()
        #expect(records.conflicts(with: records.announcement()) == (false, false))
        #expect(records.conflicts(with: records.probe()) == (false, false))
        #expect(records.conflicts(with: records.goodbye()) == (false, false))
        var other = records.service
        other.data = .srv(SRVData(port: 9, target: try DNSName("mallory.local")))
        #expect(records.conflicts(with: DNSMessage(flags: 0x8400, answers: [other])) == (true, false))
        var address = records.addressRecords[0]
        address.data = .a(IPv4Address("192.0.2.66")!)
        #expect(records.conflicts(with: DNSMessage(flags: 0x8400, additionals: [address])) == (false, true))
        // Simultaneous probes: the lexicographically later data wins (RFC 6762 §8.2).
        let lower = DNSResourceRecord(name: records.instanceName, cacheFlush: true, ttl: 120, data: .srv(SRVData(port: 1, target: records.host)))
        let higher = DNSResourceRecord(name: records.instanceName, cacheFlush: true, ttl: 120, data: .srv(SRVData(port: 65000, target: records.host)))
        let question = [DNSQuestion(name: records.instanceName, type: .any, unicastResponse: true)]
        #expect(records.conflicts(with: DNSMessage(questions: question, authorities: [records.text, lower])).instance == false)
        #expect(records.conflicts(with: DNSMessage(questions: question, authorities: [records.text, higher])).instance == true)
    }

    /// RFC 6762 §8.2: class, type, then the data byte by byte, without its length; §8.2.1: the
    /// sorted lists record by record, the longer list winning where one is a prefix of the other.
    /// The length was compared before the data, so a longer target name won over a higher port.
    @Test("simultaneous probes are decided by the data, record by record, never by its length (RFC 6762 §8.2)")
    func tieBreakComparesDataNotLength() throws {
        let records = try Self.records()  // SRV 0 0 4433 alice.local
        let question = [DNSQuestion(name: records.instanceName, type: .any, unicastResponse: true)]
        func probe(_ authorities: [DNSResourceRecord]) -> DNSMessage { DNSMessage(questions: question, authorities: authorities) }
        func srv(port: UInt16, target: String) throws -> DNSResourceRecord {
            DNSResourceRecord(name: records.instanceName, cacheFlush: true, ttl: 120, data: .srv(SRVData(port: port, target: try DNSName(target))))
        }
        // A lower port with a longer target loses; a higher port with a shorter one wins.
        #expect(records.conflicts(with: probe([records.text, try srv(port: 80, target: "a-much-longer-host-name.local")])).instance == false)
        #expect(records.conflicts(with: probe([records.text, try srv(port: 9000, target: "b.local")])).instance == true)
        // The same records and one more, sorted after them: the longer list wins; ours alone are
        // no rival.
        #expect(records.conflicts(with: probe([records.text, records.service, try srv(port: 9000, target: "b.local")])).instance == true)
        #expect(records.conflicts(with: probe([records.service, records.text])).instance == false)
        // The order they come in does not matter: they are sorted first.
        #expect(records.conflicts(with: probe([try srv(port: 9000, target: "b.local"), records.text])).instance == true)
    }

    @Test("a crafted probe that repeats its question hundreds of times is decided as the single question is")
    func repeatedProbeQuestions() throws {
        let records = try Self.records()
        let question = DNSQuestion(name: records.instanceName, type: .any, unicastResponse: true)
        let other = DNSQuestion(name: try DNSName("other.local"), type: .any, unicastResponse: false)
        // About what fits in one 9,000-byte packet: 700 questions, 200 authority records.
        let questions = Array(repeating: question, count: 700) + Array(repeating: other, count: 50)
        for port: UInt16 in [1, 65000] {
            let rivals = [records.text] + (0..<200).map { _ in
                DNSResourceRecord(name: records.instanceName, cacheFlush: true, ttl: 120, data: .srv(SRVData(port: port, target: records.host)))
            }
            let single = records.conflicts(with: DNSMessage(questions: [question], authorities: rivals))
            let repeated = records.conflicts(with: DNSMessage(questions: questions, authorities: rivals))
            #expect(single == repeated)
            #expect(repeated.instance == (port == 65000) && !repeated.host)
        }
        // Our own probe, its question repeated, is no rival.
        var ownProbe = records.probe()
        ownProbe.questions = Array(repeating: ownProbe.questions, count: 200).flatMap { $0 }
        #expect(records.conflicts(with: ownProbe) == (false, false))
    }

    @Test("renumbering: the re-announcement withdraws removed addresses; an address of ours, current or former, is no conflict")
    func renumbering() throws {
        let records = try Self.records()
        let moved = records.with(addresses: [IPAddress("198.51.100.1")!, IPAddress("fe80::1")!])
        let removed = [IPAddress("192.0.2.1")!]
        let message = moved.announcement(withdrawing: removed)
        #expect(Array(message.answers.prefix(moved.allRecords.count)) == moved.allRecords)
        let goodbyes = Array(message.answers.dropFirst(moved.allRecords.count))
        #expect(goodbyes.map(\.data) == [.a(IPv4Address("192.0.2.1")!)] && goodbyes.allSatisfy { $0.ttl == 0 && $0.name == records.host })
        // Our own earlier announcement (the old address), or a sibling responder of this host that
        // read the new addresses first, is a conflict only when its address is not ours.
        #expect(moved.conflicts(with: records.announcement()).host == true)
        #expect(moved.conflicts(with: records.announcement(), alsoOurs: Set(removed)) == (false, false))
        #expect(records.conflicts(with: moved.announcement(), alsoOurs: Set(moved.addresses)) == (false, false))
        #expect(records.conflicts(with: moved.announcement(), alsoOurs: Set(records.addresses)).host == true)
    }

    @Test("a browse's cache: records about other names are not kept, and records flooded before a real response do not push it out")
    func cacheUnderFlood() throws {
        let records = try Self.records()
        let start = ContinuousClock.now
        // 512 address records of unrelated hosts with the longest TTL, then the real response.
        var cache = DiscoveryCache()
        let junk = try (0..<DiscoveryCache.maximumRecords).map { index in
            DNSResourceRecord(name: try DNSName("x\(index).local"), ttl: UInt32.max >> 1, data: .a(IPv4Address(bytes: [10, 0, UInt8(index >> 8), UInt8(index & 0xFF)])!))
        }
        cache.insert(junk, now: start, about: .secureChannel)
        #expect(cache.count == 0)
        cache.insert(records.allRecords, now: start + .seconds(1), about: .secureChannel)
        #expect(cache.resolvedInstances(of: .secureChannel).count == 1)
        // The same flood into a cache that keeps everything (no type given): the records
        // received longest ago go first, so the response stays whole.
        var everything = DiscoveryCache()
        everything.insert(junk, now: start)
        everything.insert(records.allRecords, now: start + .seconds(1))
        #expect(everything.count == DiscoveryCache.maximumRecords)
        #expect(everything.resolvedInstances(of: .secureChannel).count == 1)
        // 512 PTRs to fake instances of the type (records a browse keeps), then the real response.
        var fakes = DiscoveryCache()
        let fakePointers = try (0..<DiscoveryCache.maximumRecords).map { index in
            DNSResourceRecord(name: ServiceType.secureChannel.domainName, ttl: UInt32.max >> 1, data: .ptr(try DNSName("fake\(index)._sf-channel._tcp.local")))
        }
        fakes.insert(fakePointers, now: start, about: .secureChannel)
        fakes.insert(records.allRecords, now: start + .seconds(1), about: .secureChannel)
        #expect(fakes.resolvedInstances(of: .secureChannel).map(\.name) == ["Alice's Mac"])
        // Address records come in only for hosts an SRV record (in the same response or held) names.
        var hosts = DiscoveryCache()
        hosts.insert(records.addressRecords, now: start, about: .secureChannel)
        #expect(hosts.count == 0)
        hosts.insert([records.pointer, records.service, records.text], now: start, about: .secureChannel)
        hosts.insert(records.addressRecords, now: start, about: .secureChannel)
        #expect(hosts.resolvedInstances(of: .secureChannel).count == 1)
    }

    /// RFC 6762 §10.2: the cache-flush bit belongs to unique records; a shared record (a PTR, one
    /// per instance under the type's name) carrying it flushed every other instance's PTR.
    @Test("a PTR with the cache-flush bit removes no other instance; an SRV with it still replaces the old one")
    func sharedRecordsIgnoreCacheFlush() throws {
        let records = try Self.records()
        let start = ContinuousClock.now
        let bob = try DNSName("Bob._sf-channel._tcp.local")
        let flushingPointer = DNSResourceRecord(name: ServiceType.secureChannel.domainName, cacheFlush: true, ttl: 4500, data: .ptr(bob))
        var cache = DiscoveryCache()
        cache.insert(records.allRecords, now: start)
        cache.insert([flushingPointer], now: start + .seconds(2))
        #expect(Set(cache.instanceNames(of: .secureChannel)) == [records.instanceName, bob])
        // So too through a browse's filter.
        var browsing = DiscoveryCache()
        browsing.insert(records.allRecords, now: start, about: .secureChannel)
        browsing.insert([flushingPointer], now: start + .seconds(2), about: .secureChannel)
        #expect(Set(browsing.instanceNames(of: .secureChannel)) == [records.instanceName, bob])
        #expect(browsing.resolvedInstances(of: .secureChannel).map(\.name) == ["Alice's Mac"])
        // A unique record with the bit still replaces those of its name and type.
        var moved = records.service
        moved.data = .srv(SRVData(port: 5555, target: records.host))
        cache.insert([moved], now: start + .seconds(2))
        #expect(cache.resolvedInstances(of: .secureChannel).map(\.port) == [5555])
    }

    /// The cache indexes records by name and type and keeps its eviction order as it goes (so
    /// that a hostile response costs O(1) per record); these are the behaviours that index must keep.
    @Test("the cache's index: a name in another case is the same name, one response's records of a name and type are all kept, a renewed record is evicted last")
    func cacheIndex() throws {
        let records = try Self.records()
        let start = ContinuousClock.now
        func address(_ last: UInt8, name: DNSName = records.host) -> DNSResourceRecord {
            DNSResourceRecord(name: name, cacheFlush: true, ttl: 120, data: .a(IPv4Address(bytes: [192, 0, 2, last])!))
        }
        // Two addresses with the cache-flush bit in one response both stay (only records received
        // more than a second ago are replaced); a third two seconds later, its host name shouted,
        // replaces both, and leaves the AAAA record (another type) alone.
        var cache = DiscoveryCache()
        cache.insert(records.allRecords + [address(7), address(8)], now: start)
        #expect(Set(try #require(cache.resolved(records.instanceName, type: .secureChannel)).addresses) == [
            IPAddress("192.0.2.1")!, IPAddress("192.0.2.7")!, IPAddress("192.0.2.8")!, IPAddress("fe80::1")!,
        ])
        let shouted = try DNSName(records.host.description.uppercased())
        cache.insert([address(9, name: shouted)], now: start + .seconds(2))
        #expect(cache.resolved(records.instanceName, type: .secureChannel)?.addresses == [IPAddress("192.0.2.9")!, IPAddress("fe80::1")!])
        #expect(cache.count == records.allRecords.count)
        // 600 addresses of one name in one response: the cache keeps its bound.
        var flooded = DiscoveryCache()
        flooded.insert((0..<600).map { index in
            DNSResourceRecord(name: records.host, cacheFlush: true, ttl: 120, data: .a(IPv4Address(bytes: [10, 0, UInt8(index >> 8), UInt8(index & 0xFF)])!))
        }, now: start)
        #expect(flooded.count == DiscoveryCache.maximumRecords)
        // The real records, then junk, then the real records renewed many times over (enough to
        // compact the eviction order more than once), then junk enough to fill the cache: the junk
        // received first goes, the renewed records stay.
        func junk(_ range: Range<Int>) throws -> [DNSResourceRecord] {
            try range.map { index in
                DNSResourceRecord(name: try DNSName("x\(index).local"), ttl: 4500, data: .a(IPv4Address(bytes: [10, 1, UInt8(index >> 8), UInt8(index & 0xFF)])!))
            }
        }
        var renewed = DiscoveryCache()
        renewed.insert(records.allRecords, now: start)
        renewed.insert(try junk(0..<10), now: start + .seconds(1))
        for round in 0..<1000 {
            renewed.insert(records.allRecords, now: start + .seconds(2) + .milliseconds(round))
        }
        renewed.insert(try junk(10..<(DiscoveryCache.maximumRecords - records.allRecords.count + 10)), now: start + .seconds(3))
        #expect(renewed.count == DiscoveryCache.maximumRecords)
        #expect(renewed.resolvedInstances(of: .secureChannel).count == 1)
    }

    @Test("the cache resolves instances, honours goodbyes and cache-flush, and stays bounded")
    func cache() throws {
        let records = try Self.records()
        var cache = DiscoveryCache()
        let start = ContinuousClock.now
        cache.insert([records.pointer], now: start)
        #expect(cache.resolvedInstances(of: .secureChannel).isEmpty)
        #expect(Set(cache.missingQuestions(for: cache.instanceNames(of: .secureChannel), type: .secureChannel).map(\.type)) == [.srv, .txt])
        cache.insert([records.service, records.text] + records.addressRecords, now: start)
        let instance = try #require(cache.resolvedInstances(of: .secureChannel).first)
        #expect(instance.name == "Alice's Mac" && instance.port == 4433 && instance.host == records.host)
        #expect(instance.addresses == [IPAddress("192.0.2.1")!, IPAddress("fe80::1")!])
        #expect(instance.txt["fp"]?.string == "ab12")
        // Cache-flush two seconds later replaces the old SRV.
        var moved = records.service
        moved.data = .srv(SRVData(port: 5555, target: records.host))
        cache.insert([moved], now: start + .seconds(2))
        #expect(cache.resolvedInstances(of: .secureChannel).first?.port == 5555)
        // Expiry after the host records' 120 s TTL.
        cache.expire(now: start + .seconds(200))
        #expect(cache.resolvedInstances(of: .secureChannel).isEmpty)
        // A goodbye removes one second later (RFC 6762 §10.1): until then another responder's
        // answer rescues the records (here the SRV), and the rest go.
        cache.insert(records.allRecords, now: start + .seconds(300))
        #expect(cache.resolvedInstances(of: .secureChannel).count == 1)
        cache.insert(records.goodbye().answers, now: start + .seconds(301))
        cache.expire(now: start + .milliseconds(301_900))
        #expect(cache.count == records.allRecords.count, "removed at once")
        // Still an answer meanwhile (a TTL of 1, in the RFC's words): the instance still resolves.
        #expect(cache.resolvedInstances(of: .secureChannel).count == 1)
        cache.insert([records.service], now: start + .milliseconds(301_900))
        cache.expire(now: start + .milliseconds(302_100))
        #expect(cache.count == 1 && cache.resolvedInstances(of: .secureChannel).isEmpty)
        cache.insert(records.goodbye().answers, now: start + .seconds(303))
        cache.expire(now: start + .milliseconds(304_100))
        #expect(cache.count == 0)
        // A goodbye for a record not held adds nothing.
        cache.insert(records.goodbye().answers, now: start + .seconds(305))
        #expect(cache.count == 0)
        // Flooding with distinct records keeps at most maximumRecords.
        for index in 0..<2000 {
            let name = try DNSName("junk\(index)._sf-channel._tcp.local")
            cache.insert([DNSResourceRecord(name: ServiceType.secureChannel.domainName, ttl: 4500, data: .ptr(name))], now: start + .seconds(306))
        }
        #expect(cache.count == DiscoveryCache.maximumRecords)
        // RFC 2181 §8: a TTL with its top bit set counts as 0 (a goodbye), not 68 years.
        var huge = DiscoveryCache()
        huge.insert(records.allRecords, now: start)
        var forever = records.service
        forever.ttl = 1 << 31
        huge.insert([forever], now: start + .milliseconds(10))
        huge.expire(now: start + .milliseconds(1_100))
        #expect(huge.resolvedInstances(of: .secureChannel).isEmpty)
        // PTR targets that are not instances of the type are ignored.
        var bogus = DiscoveryCache()
        bogus.insert([DNSResourceRecord(name: ServiceType.secureChannel.domainName, ttl: 10, data: .ptr(try DNSName("evil.example.com")))], now: start)
        #expect(bogus.instanceNames(of: .secureChannel).isEmpty)
    }
}
#endif
