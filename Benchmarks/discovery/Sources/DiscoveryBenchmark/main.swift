// Parses and serializes mDNS messages in a loop and prints messages per second (median of 5 rounds
// of about 0.5 s each). Input: a full DNS-SD announcement for one instance (PTR, SRV, TXT, A, AAAA,
// enumeration PTR; compressed), a PTR browse query, random 0-300-byte garbage (typed errors), and
// a hostile response flooding a browse's cache.
import ServiceDiscovery

func measure(_ label: String, _ body: () -> Int) {
    var rates = [Double]()
    for _ in 0..<5 {
        let clock = ContinuousClock()
        var operations = 0
        let start = clock.now
        while clock.now - start < .milliseconds(500) { operations += body() }
        let seconds = Double((clock.now - start).components.attoseconds) / 1e18 + Double((clock.now - start).components.seconds)
        rates.append(Double(operations) / seconds)
    }
    let median = rates.sorted()[2]
    print("\(label): \(Int(median)) messages/s")
}

let records = try ServiceRecords(
    instance: ServiceInstanceName("Alice's Mac"), type: .secureChannel, hostLabel: "alice", port: 4433,
    txt: TXTRecord(["fp": "3f1c9a0b5e7d2c41", "proto": "Noise_XX_25519_ChaChaPoly_SHA256", "v": "1"]),
    addresses: [IPAddress("192.0.2.1")!, IPAddress("fe80::1")!])
let announcement = try records.announcement().serialized()
let query = try DNSMessage(questions: [DNSQuestion(name: ServiceType.secureChannel.domainName, type: .ptr)]).serialized()
var generator = SystemRandomNumberGenerator()
let garbage = (0..<1024).map { _ in (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) } }

print("announcement: \(announcement.count) bytes, \(records.allRecords.count) records; query: \(query.count) bytes")
measure("parse announcement") {
    for _ in 0..<100 { precondition((try? DNSMessage(parsing: announcement))?.answers.count == 6) }
    return 100
}
measure("parse browse query") {
    for _ in 0..<100 { precondition((try? DNSMessage(parsing: query)) != nil) }
    return 100
}
measure("reject random garbage") {
    var failures = 0
    for packet in garbage where (try? DNSMessage(parsing: packet)) == nil { failures += 1 }
    return garbage.count
}
let message = records.announcement()
measure("serialize announcement") {
    for _ in 0..<100 { precondition((try? message.serialized())?.count == announcement.count) }
    return 100
}
measure("answer a browse query (responder logic + serialize)") {
    for _ in 0..<100 {
        let parsed = try! DNSMessage(parsing: query)
        precondition((try? records.response(to: parsed, sourcePort: 5353)?.message.serialized()) != nil)
    }
    return 100
}
// A hostile response to a browse: 512 SRV records of distinct instances of the type, each with the
// cache-flush bit, into a cache already full of such records, so that each record evicts one.
let floods = try (0..<2).map { batch in
    try (0..<DiscoveryCache.maximumRecords).map { index in
        DNSResourceRecord(
            name: try DNSName("i\(batch)-\(index)._sf-channel._tcp.local"), cacheFlush: true, ttl: UInt32.max >> 1,
            data: .srv(SRVData(port: 4433, target: try DNSName("h\(index).local"))))
    }
}
var cache = DiscoveryCache()
var received = ContinuousClock.now
var batch = 0
cache.insert(floods[1], now: received, about: .secureChannel)
measure("insert a hostile 512-record response into a full browse cache") {
    received += .seconds(2)
    cache.insert(floods[batch], now: received, about: .secureChannel)
    precondition(cache.count == DiscoveryCache.maximumRecords)
    batch = 1 - batch
    return 1
}
// A 9,000-byte query of 1,455 questions, the first a name of 127 one-byte labels, every other one
// a pointer to it: within every per-name limit, but 185,000 labels in all (parsed, or refused).
var pointing: [UInt8] = [0, 0, 0, 0, UInt8(1_455 >> 8), UInt8(1_455 & 0xFF), 0, 0, 0, 0, 0, 0]
for _ in 0..<127 { pointing += [1, 0x61] }
pointing += [0, 0, 12, 0, 1]
for _ in 1..<1_455 { pointing += [0xC0, 12, 0, 12, 0, 1] }
measure("a 9,000-byte query whose 1,455 names all point at one of 127 labels") {
    _ = try? DNSMessage(parsing: pointing)
    return 1
}
print("ANNOUNCEMENT_HEX=\(announcement.map { String(($0 >> 4) & 0xF, radix: 16) + String($0 & 0xF, radix: 16) }.joined())")
