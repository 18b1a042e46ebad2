extension DNSMessage {
    /// Parses a complete message from untrusted bytes.
    ///
    /// Guarantees: no read outside `bytes`; a message larger than `maximumSize`, header counts that
    /// cannot fit, a label over 63 bytes, a name over 255 bytes, a compression pointer that does not
    /// point strictly before the labels using it, names holding more than `maximumDecodedLabels`
    /// labels in all, record data of the wrong length, and bytes after the last record are each a
    /// `DNSError`. Unknown record types are kept as `.opaque`.
    public init(parsing bytes: [UInt8]) throws(DNSError) {
        guard bytes.count <= Self.maximumSize else { throw .messageTooLarge(size: bytes.count) }
        var reader = DNSReader(bytes: bytes)
        let id = try reader.readUInt16()
        let flags = try reader.readUInt16()
        let counts = [try reader.readUInt16(), try reader.readUInt16(), try reader.readUInt16(), try reader.readUInt16()]
        // A question takes at least 5 bytes (root name, type, class), a record at least 11.
        let minimum = Int(counts[0]) * 5 + Int(counts[1]) * 11 + Int(counts[2]) * 11 + Int(counts[3]) * 11
        guard minimum <= reader.remaining else {
            throw .recordCountExceedsMessage(count: counts.reduce(0) { $0 + Int($1) })
        }
        var questions = [DNSQuestion]()
        questions.reserveCapacity(Int(counts[0]))
        for _ in 0..<counts[0] {
            let name = try reader.readName()
            let type = DNSRecordType(rawValue: try reader.readUInt16())
            let rawClass = try reader.readUInt16()
            questions.append(
                DNSQuestion(name: name, type: type, recordClass: DNSClass(rawValue: rawClass), unicastResponse: rawClass & 0x8000 != 0))
        }
        var sections = [[DNSResourceRecord]]()
        for count in counts.dropFirst() {
            var records = [DNSResourceRecord]()
            records.reserveCapacity(Int(count))
            for _ in 0..<count { records.append(try reader.readRecord()) }
            sections.append(records)
        }
        guard reader.remaining == 0 else { throw .trailingData(count: reader.remaining) }
        self.init(
            id: id, flags: flags, questions: questions, answers: sections[0], authorities: sections[1], additionals: sections[2])
    }
}

extension DNSMessage {
    /// The most labels the names of one message may hold in all, compression pointers followed:
    /// twice what the largest message could spell out without compression (every label at least
    /// two bytes), above what compression lets an honest message of that size hold (a record
    /// whose name is a pointer takes 12 bytes, so about 750 records of four-label names, 3,000
    /// labels), and a bound on the work a hostile one can ask for (1,455 questions each pointing
    /// at a name of 127 labels asked for 185,000 copies).
    public static let maximumDecodedLabels = maximumSize
}

/// A bounds-checked cursor over a DNS message.
struct DNSReader {
    /// The most compression pointers followed in one name.
    static let maximumPointers = 127

    let bytes: [UInt8]
    var offset = 0
    /// Labels decoded so far, in all the names read.
    private var labelsDecoded = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func readUInt8() throws(DNSError) -> UInt8 {
        guard offset < bytes.count else { throw .truncated(offset: offset) }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16() throws(DNSError) -> UInt16 {
        guard bytes.count - offset >= 2 else { throw .truncated(offset: offset) }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    mutating func readUInt32() throws(DNSError) -> UInt32 {
        guard bytes.count - offset >= 4 else { throw .truncated(offset: offset) }
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }

    mutating func readBytes(_ count: Int) throws(DNSError) -> [UInt8] {
        guard count >= 0, bytes.count - offset >= count else { throw .truncated(offset: offset) }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// Reads a possibly compressed name. Each pointer must target a position strictly before the
    /// start of the run of labels it ends, so positions strictly decrease and a loop is impossible.
    /// At most `maximumPointers` are followed per name (a name has at most 127 labels, and an
    /// encoder needs one pointer per name): a chain of thousands of pointers, each a step back,
    /// would otherwise cost a walk of the whole message for every name that enters it.
    mutating func readName() throws(DNSError) -> DNSName {
        var labels = [[UInt8]]()
        var pointers = 0
        var wireLength = 1
        var position = offset
        var runStart = offset
        var jumped = false
        while true {
            guard position < bytes.count else { throw .truncated(offset: position) }
            let length = bytes[position]
            switch length & 0xC0 {
            case 0x00:
                if length == 0 {
                    if !jumped { offset = position + 1 }
                    return DNSName(unchecked: labels)
                }
                let start = position + 1
                guard bytes.count - start >= Int(length) else { throw .truncated(offset: start) }
                wireLength += Int(length) + 1
                guard wireLength <= DNSName.maximumWireLength else { throw .nameTooLong(length: wireLength) }
                labelsDecoded += 1
                guard labelsDecoded <= DNSMessage.maximumDecodedLabels else { throw .tooManyLabels(limit: DNSMessage.maximumDecodedLabels) }
                labels.append(Array(bytes[start..<(start + Int(length))]))
                position = start + Int(length)
            case 0xC0:
                guard position + 1 < bytes.count else { throw .truncated(offset: position + 1) }
                let target = Int(length & 0x3F) << 8 | Int(bytes[position + 1])
                guard target < runStart else { throw .invalidCompressionPointer(offset: position, target: target) }
                pointers += 1
                guard pointers <= Self.maximumPointers else { throw .invalidCompressionPointer(offset: position, target: target) }
                if !jumped { offset = position + 2 }
                jumped = true
                position = target
                runStart = target
            default:
                throw .unsupportedLabelType(length)
            }
        }
    }

    mutating func readRecord() throws(DNSError) -> DNSResourceRecord {
        let name = try readName()
        let type = DNSRecordType(rawValue: try readUInt16())
        let rawClass = try readUInt16()
        let ttl = try readUInt32()
        let length = Int(try readUInt16())
        guard remaining >= length else { throw .truncated(offset: offset) }
        let end = offset + length
        let data: DNSRecordData
        switch type {
        case .a:
            guard length == 4, let address = IPv4Address(bytes: try readBytes(4)) else {
                throw .invalidRecordData(type: type.rawValue, reason: "A data must be 4 bytes, not \(length)")
            }
            data = .a(address)
        case .aaaa:
            guard length == 16, let address = IPv6Address(bytes: try readBytes(16)) else {
                throw .invalidRecordData(type: type.rawValue, reason: "AAAA data must be 16 bytes, not \(length)")
            }
            data = .aaaa(address)
        case .ptr:
            data = .ptr(try readNameWithin(end: end, type: type))
        case .srv:
            guard length >= 7 else { throw .invalidRecordData(type: type.rawValue, reason: "SRV data too short") }
            let priority = try readUInt16(), weight = try readUInt16(), port = try readUInt16()
            let target = try readNameWithin(end: end, type: type)
            data = .srv(SRVData(priority: priority, weight: weight, port: port, target: target))
        case .txt:
            var strings = [[UInt8]]()
            while offset < end {
                let count = Int(try readUInt8())
                guard end - offset >= count else {
                    throw .invalidRecordData(type: type.rawValue, reason: "TXT string overruns the record data")
                }
                strings.append(try readBytes(count))
            }
            data = .txt(strings)
        default:
            data = .opaque(type: type, bytes: try readBytes(length))
        }
        guard offset == end else {
            throw .invalidRecordData(type: type.rawValue, reason: "data length \(length) does not match its content")
        }
        return DNSResourceRecord(
            name: name, recordClass: DNSClass(rawValue: rawClass), cacheFlush: rawClass & 0x8000 != 0, ttl: ttl, data: data)
    }

    /// Reads a name that must end (its uncompressed part) exactly within the record data.
    private mutating func readNameWithin(end: Int, type: DNSRecordType) throws(DNSError) -> DNSName {
        let name = try readName()
        guard offset <= end else { throw .invalidRecordData(type: type.rawValue, reason: "name overruns the record data") }
        return name
    }
}
