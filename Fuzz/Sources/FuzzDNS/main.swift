import Foundation
import FuzzSupport
import ServiceDiscovery

// A multicast DNS packet as the built-in responder and browser receive it (RFC 1035 / 6762 / 6763):
// the decoder (names with compression pointers and loops, truncated records, TXT, SRV, NSEC, OPT,
// unknown types), then what each side does with the message: the responder's answer (known-answer
// suppression, unicast and legacy replies, additional records) and its conflict check; the
// browser's cache (insert, resolve, the questions still missing, expiry). A message that decodes
// must encode again and decode to the same message.
// Seeds: the library's own probe, announcement, goodbye and queries, and python-zeroconf's packets
// (Fuzz/make-seeds.sh).
let records = try! ServiceRecords(
    instance: ServiceInstanceName("Fuzz Printer"), type: .secureChannel, hostLabel: "fuzzhost", port: 4242,
    txt: TXTRecord(["fp": "00ff", "v": "1"]), addresses: [IPAddress("192.0.2.7")!, IPAddress("fe80::7")!])

Fuzz.main(seeds: {
    var seeds = [records.probe(), records.announcement(), records.goodbye()]
    seeds.append(DNSMessage(questions: [DNSQuestion(name: ServiceType.secureChannel.domainName, type: .ptr)]))
    seeds.append(DNSMessage(
        questions: [DNSQuestion(name: records.instanceName, type: .srv, unicastResponse: true)], answers: [records.text]))
    return try seeds.map { Data(try $0.serialized()) }
}) { input in
    let bytes = [UInt8](input)
    guard let message = try? DNSMessage(parsing: bytes) else { return }
    if let encoded = try? message.serialized() {
        guard let again = try? DNSMessage(parsing: encoded), again == message else {
            fatalError("a decoded message does not encode to itself")
        }
    }
    // The responder.
    for sourcePort in [5353, 40000] { _ = records.response(to: message, sourcePort: sourcePort) }
    _ = records.conflicts(with: message)
    // The browser.
    var cache = DiscoveryCache()
    let now = ContinuousClock.now
    cache.insert(message.answers + message.additionals, now: now)
    let instances = cache.resolvedInstances(of: .secureChannel)
    _ = cache.missingQuestions(for: cache.instanceNames(of: .secureChannel), type: .secureChannel)
    for instance in instances { _ = instance.txt.dictionary }
    cache.expire(now: now + .seconds(4500))
}
