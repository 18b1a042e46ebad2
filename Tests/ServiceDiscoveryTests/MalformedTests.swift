import Foundation
import SFTestSupport
import Testing

@testable import ServiceDiscovery

/// Hostile input: every truncation, every bit flipped, loops, oversize labels and counts, bad TXT.
@Suite("DNS message codec: malformed input")
struct MalformedTests {
    /// Parses `bytes`; a successful parse must re-encode and re-parse to the same message.
    static func parseOrTypedError(_ bytes: [UInt8]) -> Result<DNSMessage, DNSError> {
        do {
            let message = try DNSMessage(parsing: bytes)
            if let again = try? DNSMessage(parsing: try message.serialized()) {
                #expect(again == message)
            } else {
                // Opaque data holding compression pointers cannot be moved; everything else must re-encode.
                #expect(message.allRecords.contains { if case .opaque = $0.data { true } else { false } })
            }
            return .success(message)
        } catch {
            return .failure(error)
        }
    }

    @Test("every proper prefix of each packet is a typed error", arguments: Packets.all.map(\.0))
    func everyTruncation(packetName: String) throws {
        let packet = Packets.all.first { $0.0 == packetName }!.1
        for length in 0..<packet.count {
            #expect(throws: DNSError.self, "prefix of \(length) bytes") { try DNSMessage(parsing: Array(packet.prefix(length))) }
        }
        _ = try DNSMessage(parsing: packet)
    }

    @Test("every single bit flipped parses or fails with a typed error", arguments: Packets.all.map(\.0))
    func everyBitFlipped(packetName: String) {
        let packet = Packets.all.first { $0.0 == packetName }!.1
        var failures = 0, parses = 0
        for index in packet.indices {
            for bit in 0..<8 {
                var copy = packet
                copy[index] ^= 1 << bit
                switch Self.parseOrTypedError(copy) {
                case .success: parses += 1
                case .failure: failures += 1
                }
            }
            var inverted = packet
            inverted[index] ^= 0xFF
            _ = Self.parseOrTypedError(inverted)
        }
        #expect(parses + failures == packet.count * 8)
        #expect(failures > 0 && parses > 0)
    }

    @Test("random and mutated packets never trap")
    func fuzz() {
        var rng = SplitMix64(seed: 0x5F_D15C)
        let base = Array(Packets.printerResponse)
        for round in 0..<3000 {
            var bytes: [UInt8]
            if round % 3 == 0 {
                bytes = (0..<Int(rng.next() % 200)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            } else {
                bytes = base
                for _ in 0..<(1 + Int(rng.next() % 6)) {
                    bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: rng.next())
                }
                if round % 5 == 0 { bytes = Array(bytes.prefix(Int(rng.next() % UInt64(bytes.count)))) }
            }
            _ = Self.parseOrTypedError(bytes)
        }
    }

    static let header1Question: [UInt8] = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]

    @Test("a pointer to itself, a two-pointer loop and forward pointers are refused")
    func pointerLoops() {
        // Question name at 12 is a pointer to 12.
        #expect(throws: DNSError.invalidCompressionPointer(offset: 12, target: 12)) {
            try DNSMessage(parsing: Self.header1Question + [0xC0, 12, 0, 1, 0, 1])
        }
        // 12: label "a" then pointer to 12 (a loop through a label).
        #expect(throws: DNSError.invalidCompressionPointer(offset: 14, target: 12)) {
            try DNSMessage(parsing: Self.header1Question + [1, 0x61, 0xC0, 12, 0, 1, 0, 1])
        }
        // Forward pointer to a valid name later in the packet.
        #expect(throws: DNSError.invalidCompressionPointer(offset: 12, target: 18)) {
            try DNSMessage(parsing: Self.header1Question + [0xC0, 18, 0, 1, 0, 1, 1, 0x61, 0])
        }
        // Pointer past the end.
        #expect(throws: DNSError.self) { try DNSMessage(parsing: Self.header1Question + [0xFF, 0xFF, 0, 1, 0, 1]) }
        // Two pointers that point at each other: an answer name at 18 -> 12, and the question at 12 -> 18.
        let twoLoop: [UInt8] = [0, 0, 0x84, 0, 0, 1, 0, 1, 0, 0, 0, 0] + [0xC0, 18, 0, 1, 0, 1] + [0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]
        #expect(throws: DNSError.self) { try DNSMessage(parsing: twoLoop) }
    }

    /// A message whose second answer's name enters a chain of `pointers` backward compression
    /// pointers, each one step back, hidden in the first answer's opaque data and ending at the
    /// question's name "a" (plus the answer name's own pointer into it).
    static func pointerChain(_ pointers: Int) -> [UInt8] {
        var bytes: [UInt8] = [0, 0, 0x84, 0, 0, 1, 0, 2, 0, 0, 0, 0] + [1, 0x61, 0, 0, 1, 0, 1]  // question "a" at 12
        let length = 2 * pointers
        bytes += [0xC0, 12, 0xFF, 0x00, 0, 1, 0, 0, 0, 120, UInt8(length >> 8), UInt8(length & 0xFF)]  // type 65280, opaque
        let chainStart = bytes.count
        for index in 0..<pointers {
            let target = index == 0 ? 12 : chainStart + 2 * (index - 1)
            bytes += [0xC0 | UInt8(target >> 8), UInt8(target & 0xFF)]
        }
        let last = chainStart + 2 * (pointers - 1)
        bytes += [0xC0 | UInt8(last >> 8), UInt8(last & 0xFF), 0, 1, 0, 1, 0, 0, 0, 120, 0, 4, 192, 0, 2, 1]
        return bytes
    }

    @Test("a name is read through at most 127 compression pointers: a long chain of them is refused")
    func pointerChains() throws {
        let accepted = try DNSMessage(parsing: Self.pointerChain(DNSReader.maximumPointers - 1))
        #expect(accepted.answers.last?.name == (try DNSName("a")))
        #expect(throws: DNSError.self) { try DNSMessage(parsing: Self.pointerChain(DNSReader.maximumPointers)) }
        #expect(throws: DNSError.self) { try DNSMessage(parsing: Self.pointerChain(3_000)) }
    }

    /// A query of `questions` questions: the first a name of 127 one-byte labels (255 bytes),
    /// every other one only a pointer to it.
    static func questionsPointingAtALongName(_ questions: Int) -> [UInt8] {
        var bytes: [UInt8] = [0, 0, 0, 0, UInt8(questions >> 8), UInt8(questions & 0xFF), 0, 0, 0, 0, 0, 0]
        for _ in 0..<127 { bytes += [1, 0x61] }
        bytes += [0, 0, 12, 0, 1]
        for _ in 1..<questions { bytes += [0xC0, 12, 0, 12, 0, 1] }
        return bytes
    }

    /// Every name of this 9,000-byte query is within the limits, but the names it asks for hold
    /// 185,000 labels in all: each one a copy, about 20 ms of one core for one datagram.
    @Test("names that hold more labels in all than the message could spell out twice are refused")
    func labelsInAllAreBounded() throws {
        let hostile = Self.questionsPointingAtALongName(1_455)
        #expect(hostile.count <= DNSMessage.maximumSize)
        #expect(throws: DNSError.tooManyLabels(limit: DNSMessage.maximumDecodedLabels)) { try DNSMessage(parsing: hostile) }
        // Up to the limit, such a message is read (70 of these names hold 8,890 labels).
        let within = try DNSMessage(parsing: Self.questionsPointingAtALongName(70))
        #expect(within.questions.count == 70 && within.questions.allSatisfy { $0.name.labels.count == 127 })
    }

    @Test("a name longer than 255 bytes through backward pointers is refused")
    func longNameThroughPointers() {
        // Answer 1 owns a 64-byte name at 12; answers 2..5 each prepend 63 bytes with a pointer back.
        var bytes: [UInt8] = [0, 0, 0x84, 0, 0, 0, 0, 5, 0, 0, 0, 0]
        var previous = bytes.count
        bytes += [63] + Array(repeating: 0x61, count: 63) + [0] + [0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]
        for _ in 0..<4 {
            let here = bytes.count
            bytes += [63] + Array(repeating: 0x62, count: 63) + [0xC0 | UInt8(previous >> 8), UInt8(previous & 0xFF)]
            bytes += [0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]
            previous = here
        }
        #expect(throws: DNSError.nameTooLong(length: 257)) { try DNSMessage(parsing: bytes) }
    }

    @Test("reserved label types (oversize length bytes 0x40-0xBF) are refused")
    func oversizeLabels() {
        for byte: UInt8 in [64, 0x7F, 0x80, 0xBF] {
            #expect(throws: DNSError.unsupportedLabelType(byte)) {
                try DNSMessage(parsing: Self.header1Question + [byte] + Array(repeating: 0x61, count: Int(byte & 0x3F)) + [0, 0, 1, 0, 1])
            }
        }
        let label63 = Self.header1Question + [63] + Array(repeating: 0x61, count: 63) + [0, 0, 1, 0, 1]
        #expect((try? DNSMessage(parsing: label63)) != nil)
    }

    @Test("header counts larger than the message can hold are refused before any allocation")
    func recordCounts() {
        #expect(throws: DNSError.recordCountExceedsMessage(count: 65535)) {
            try DNSMessage(parsing: [0, 0, 0x84, 0, 0, 0, 0xFF, 0xFF, 0, 0, 0, 0] + Array(repeating: 0, count: 100))
        }
        #expect(throws: DNSError.recordCountExceedsMessage(count: 4 * 65535)) {
            try DNSMessage(parsing: [0, 0, 0, 0] + Array(repeating: 0xFF, count: 8))
        }
        #expect(throws: DNSError.messageTooLarge(size: 9001)) { try DNSMessage(parsing: Array(repeating: 0, count: 9001)) }
        #expect(throws: DNSError.trailingData(count: 1)) { try DNSMessage(parsing: Array(repeating: 0, count: 13)) }
        #expect(throws: DNSError.truncated(offset: 0)) { try DNSMessage(parsing: []) }
    }

    /// A response with one record of `type` whose data is `data` (`length` overrides RDLENGTH).
    static func record(type: UInt16, data: [UInt8], length: Int? = nil) -> [UInt8] {
        let rdlength = length ?? data.count
        return [0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0] + [1, 0x78, 0] + [UInt8(type >> 8), UInt8(type & 0xFF), 0, 1, 0, 0, 0, 9]
            + [UInt8(rdlength >> 8), UInt8(rdlength & 0xFF)] + data
    }

    @Test("record data of the wrong size for its type is refused")
    func badRecordData() {
        #expect(throws: DNSError.self) { try DNSMessage(parsing: Self.record(type: 1, data: [1, 2, 3])) }
        #expect(throws: DNSError.self) { try DNSMessage(parsing: Self.record(type: 1, data: [1, 2, 3, 4, 5])) }
        #expect(throws: DNSError.self) { try DNSMessage(parsing: Self.record(type: 28, data: Array(repeating: 0, count: 15))) }
        #expect(throws: DNSError.self) { try DNSMessage(parsing: Self.record(type: 33, data: [0, 0, 0, 0, 1])) }
        // SRV whose target name runs past RDLENGTH into the next bytes.
        #expect(throws: DNSError.self) { try DNSMessage(parsing: Self.record(type: 33, data: [0, 0, 0, 0, 0, 80, 1, 0x61, 0], length: 7) + [0, 0]) }
        // PTR with RDLENGTH longer than its name.
        #expect(throws: DNSError.self) { try DNSMessage(parsing: Self.record(type: 12, data: [1, 0x61, 0, 0])) }
        // RDLENGTH beyond the end.
        #expect(throws: DNSError.truncated(offset: 25)) { try DNSMessage(parsing: Self.record(type: 99, data: [1], length: 2)) }
    }

    @Test("TXT strings that overrun the record data are refused; bad keys are skipped")
    func badTXT() throws {
        #expect(throws: DNSError.invalidRecordData(type: 16, reason: "TXT string overruns the record data")) {
            try DNSMessage(parsing: Self.record(type: 16, data: [5, 0x61, 0x62]))
        }
        #expect(throws: DNSError.self) { try DNSMessage(parsing: Self.record(type: 16, data: [3, 0x61, 0x62, 0x63, 9])) }
        let strings: [[UInt8]] = [
            Array("=novalue".utf8), [0x6B, 0x01, 0x3D, 0x31], Array("Key=one".utf8), Array("KEY=two".utf8), Array("flag".utf8), [],
            Array("empty=".utf8), Array("eq=a=b".utf8), [0x62, 0x3D, 0xFF, 0x00],
        ]
        let txt = TXTRecord(strings: strings)
        #expect(txt.entries.map(\.key) == ["Key", "flag", "empty", "eq", "b"])
        #expect(txt["key"]?.string == "one")
        #expect(txt["FLAG"] == .present)
        #expect(txt["empty"] == .bytes([]))
        #expect(txt["eq"]?.string == "a=b")
        #expect(txt["b"] == .bytes([0xFF, 0x00]))
        #expect(txt["b"]?.string == nil)
        #expect(txt["novalue"] == nil)
    }

    @Test("building TXT records refuses bad keys, duplicates, long attributes and oversize records")
    func buildingTXT() throws {
        #expect(throws: DNSError.self) { try TXTRecord(["": "x"]) }
        #expect(throws: DNSError.self) { try TXTRecord(["a=b": "x"]) }
        #expect(throws: DNSError.self) { try TXTRecord(["ключ": "x"]) }
        #expect(throws: DNSError.self) { try TXTRecord(["k": String(repeating: "v", count: 254)]) }
        _ = try TXTRecord(["k": String(repeating: "v", count: 253)])
        var many = [String: String]()
        for index in 0..<6 { many["k\(index)"] = String(repeating: "v", count: 250) }
        #expect(throws: DNSError.self) { try TXTRecord(many) }
        var record = try TXTRecord(["fp": "aa", "v": "1"])
        try record.set("FP", .bytes(Array("bb".utf8)))
        #expect(record.entries.count == 2)
        #expect(record["fp"]?.string == "bb")
        #expect(TXTRecord().strings == [[]])
        #expect(TXTRecord(strings: record.strings) == record)
    }
}
