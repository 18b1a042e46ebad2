import Foundation
import SFTestSupport
import Testing

@testable import ServiceDiscovery

@Suite("DNS message codec")
struct CodecTests {
    @Test("the hand-assembled printer announcement parses to the records it encodes")
    func printerResponse() throws {
        let message = try DNSMessage(parsing: Array(Packets.printerResponse))
        #expect(message.isResponse)
        #expect(message.flags == 0x8400)
        #expect(message.questions.isEmpty && message.answers.count == 4)
        let type = try DNSName("_http._tcp.local.")
        let instance = try DNSName("My Printer._http._tcp.local.")
        let host = try DNSName("printer.local.")
        #expect(message.answers[0] == DNSResourceRecord(name: type, ttl: 4500, data: .ptr(instance)))
        #expect(message.answers[1] == DNSResourceRecord(name: instance, cacheFlush: true, ttl: 120, data: .srv(SRVData(port: 631, target: host))))
        guard case .txt(let strings) = message.answers[2].data else { Issue.record("no TXT"); return }
        #expect(message.answers[2].cacheFlush)
        let txt = TXTRecord(strings: strings)
        #expect(txt["txtvers"] == .bytes(Array("1".utf8)))
        #expect(txt["PDL"]?.string == "application/postscript")  // keys ignore case; first wins
        #expect(txt["color"] == .present)  // boolean attribute
        #expect(txt.entries.count == 3)  // duplicate and empty key dropped
        #expect(message.answers[3] == DNSResourceRecord(name: host, cacheFlush: true, ttl: 120, data: .a(IPv4Address("192.0.2.5")!)))
    }

    @Test("browse query and probe parse: QM and QU bits, authority section")
    func queries() throws {
        let browse = try DNSMessage(parsing: Array(Packets.browseQuery))
        #expect(!browse.isResponse)
        #expect(browse.questions == [DNSQuestion(name: try DNSName("_http._tcp.local"), type: .ptr)])
        let probe = try DNSMessage(parsing: Array(Packets.probe))
        #expect(probe.questions.count == 1)
        #expect(probe.questions[0].unicastResponse)
        #expect(probe.questions[0].type == .any)
        #expect(probe.authorities.count == 1)
        #expect(probe.authorities[0].data == .srv(SRVData(port: 631, target: try DNSName("printer.local"))))
    }

    static func sampleMessage() throws -> DNSMessage {
        let type = try DNSName("_sf-channel._tcp.local.")
        let instance = try DNSName("Kitchen\\.Mac ünïcode._sf-channel._tcp.local.")
        let host = try DNSName("Host-1.local.")
        return DNSMessage(
            id: 0x1234, flags: DNSMessage.responseFlags,
            questions: [DNSQuestion(name: type, type: .ptr, unicastResponse: true)],
            answers: [
                DNSResourceRecord(name: type, ttl: 4500, data: .ptr(instance)),
                DNSResourceRecord(name: instance, cacheFlush: true, ttl: 120, data: .srv(SRVData(priority: 1, weight: 2, port: 443, target: host))),
                DNSResourceRecord(name: instance, cacheFlush: true, ttl: 4500, data: .txt([Array("fp=00ff".utf8), Array("v=1".utf8), []])),
            ],
            authorities: [DNSResourceRecord(name: host, ttl: 7, data: .opaque(type: .nsec, bytes: [0xC0, 0x0C, 0, 1, 0x40]))],
            additionals: [
                DNSResourceRecord(name: host, cacheFlush: true, ttl: 120, data: .a(IPv4Address("192.0.2.1")!)),
                DNSResourceRecord(name: host, cacheFlush: true, ttl: 120, data: .aaaa(IPv6Address("fe80::1")!)),
                DNSResourceRecord(name: try DNSName("x.local"), recordClass: DNSClass(rawValue: 3), ttl: 1, data: .opaque(type: DNSRecordType(rawValue: 99), bytes: [])),
            ])
    }

    @Test("every record type round-trips, names are compressed, and re-encoding is stable")
    func roundTrip() throws {
        let message = try Self.sampleMessage()
        let bytes = try message.serialized()
        let parsed = try DNSMessage(parsing: bytes)
        #expect(parsed == message)
        #expect(try parsed.serialized() == bytes)
        // The type name appears once in full; later uses are 2-byte pointers.
        let typeLabel = Array("_sf-channel".utf8)
        let occurrences = (0...(bytes.count - typeLabel.count)).filter { Array(bytes[$0..<($0 + typeLabel.count)]) == typeLabel }
        #expect(occurrences.count == 1)
        var plain = DNSWriter(compressing: false)
        for record in message.allRecords { try plain.writeRecord(record) }
        let questionBytes = message.questions.reduce(0) { $0 + $1.name.wireLength + 4 }
        #expect(bytes.count < 12 + questionBytes + plain.bytes.count - 60)
    }

    @Test("the printer packet re-encodes to bytes that parse to the same message")
    func reencodePublished() throws {
        for (name, packet) in Packets.all {
            let message = try DNSMessage(parsing: packet)
            let again = try DNSMessage(parsing: try message.serialized())
            #expect(again == message, "\(name)")
        }
    }

    @Test("names: presentation escapes, case-insensitive equality, limits")
    func names() throws {
        let name = try DNSName("My\\.Printer\\\\x._http._tcp.local.")
        #expect(name.labels[0] == Array("My.Printer\\x".utf8))
        #expect(name.description == "My\\.Printer\\\\x._http._tcp.local.")
        #expect(try DNSName("a\\065b.local").labels[0] == Array("aAb".utf8))
        #expect(try DNSName("HOST.Local.") == DNSName("host.local"))
        #expect(Set([try DNSName("HOST.Local."), try DNSName("host.local")]).count == 1)
        #expect(try DNSName("Ä.local") != DNSName("ä.local"))  // only ASCII case folds
        #expect(try DNSName(labels: [[1, 0x7F]]).description == "\\001\\127.")
        #expect(throws: DNSError.invalidLabelLength(64)) { try DNSName(labels: [Array(repeating: 0x61, count: 64)]) }
        #expect(throws: DNSError.invalidLabelLength(0)) { try DNSName(labels: [[]]) }
        _ = try DNSName(labels: Array(repeating: Array(repeating: 0x61, count: 63), count: 3) + [Array(repeating: 0x61, count: 61)])
        #expect(throws: DNSError.nameTooLong(length: 256)) {
            try DNSName(labels: Array(repeating: Array(repeating: 0x61, count: 63), count: 3) + [Array(repeating: 0x61, count: 62)])
        }
        #expect(throws: DNSError.self) { try DNSName("a..b") }
        #expect(throws: DNSError.self) { try DNSName("a\\") }
        #expect(throws: DNSError.self) { try DNSName("a\\99") }
        #expect(throws: DNSError.self) { try DNSName("a\\256.b") }
        #expect(try DNSName("x._tcp.local").hasSuffix(DNSName("_TCP.local")))
    }

    @Test("serialization refuses TXT strings over 255 bytes and messages over the limit")
    func serializationLimits() throws {
        let name = try DNSName("a.local")
        let longString = DNSMessage(answers: [DNSResourceRecord(name: name, ttl: 1, data: .txt([Array(repeating: 0x61, count: 256)]))])
        #expect(throws: DNSError.invalidTXT("a string of 256 bytes (limit 255)")) { try longString.serialized() }
        let big = DNSMessage(answers: Array(repeating: DNSResourceRecord(name: name, ttl: 1, data: .opaque(type: .nsec, bytes: Array(repeating: 0, count: 1000))), count: 10))
        #expect(throws: DNSError.self) { try big.serialized() }
    }

    @Test("a TXT attribute over 255 bytes is refused when set, with or without a value")
    func txtAttributeLimit() throws {
        var record = TXTRecord()
        let longKey = String(repeating: "k", count: 256)
        #expect(throws: DNSError.invalidTXT("attribute \"\(longKey)\" is longer than 255 bytes")) { try record.set(longKey, .present) }
        #expect(throws: DNSError.self) { try record.set("k", .bytes(Array(repeating: 0x61, count: 254))) }
        try record.set(String(repeating: "k", count: 255), .present)
        try record.set("v", .bytes(Array(repeating: 0x61, count: 253)))
        #expect(record.strings.map(\.count).sorted() == [255, 255])
    }
}
