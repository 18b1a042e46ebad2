extension DNSMessage {
    /// The message in wire form, names compressed (RFC 1035 §4.1.4), including names inside PTR and
    /// SRV data as multicast DNS permits (RFC 6762 §18.14).
    ///
    /// Throws `DNSError.messageTooLarge` above `maximumSize`, `invalidTXT` for a TXT string over 255
    /// bytes, and `invalidRecordData` for opaque data over 65,535 bytes; nothing is returned then.
    public func serialized() throws(DNSError) -> [UInt8] {
        var writer = DNSWriter()
        writer.writeUInt16(id)
        writer.writeUInt16(flags)
        for count in [questions.count, answers.count, authorities.count, additionals.count] {
            guard count <= Int(UInt16.max) else { throw .messageTooLarge(size: count) }
            writer.writeUInt16(UInt16(count))
        }
        for question in questions {
            writer.writeName(question.name)
            writer.writeUInt16(question.type.rawValue)
            writer.writeUInt16(question.recordClass.rawValue | (question.unicastResponse ? 0x8000 : 0))
        }
        for record in answers + authorities + additionals {
            try writer.writeRecord(record)
        }
        guard writer.bytes.count <= Self.maximumSize else { throw .messageTooLarge(size: writer.bytes.count) }
        return writer.bytes
    }
}

/// Writes DNS wire form, remembering where each name suffix was written for compression.
struct DNSWriter {
    var bytes = [UInt8]()
    private var suffixOffsets = [[[UInt8]]: Int]()
    private let compressing: Bool

    init(compressing: Bool = true) {
        self.compressing = compressing
        bytes.reserveCapacity(512)
    }

    mutating func writeUInt16(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(value & 0xFF))
    }

    mutating func writeUInt32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((value >> UInt32(shift)) & 0xFF)) }
    }

    mutating func writeName(_ name: DNSName) {
        let canonical = name.canonicalLabels
        for index in canonical.indices where compressing {
            let suffix = Array(canonical[index...])
            if let target = suffixOffsets[suffix] {
                writeUInt16(0xC000 | UInt16(target))
                return
            }
            if bytes.count < 0x3FFF { suffixOffsets[suffix] = bytes.count }
            bytes.append(UInt8(name.labels[index].count))
            bytes.append(contentsOf: name.labels[index])
        }
        if !compressing {
            for label in name.labels {
                bytes.append(UInt8(label.count))
                bytes.append(contentsOf: label)
            }
        }
        bytes.append(0)
    }

    mutating func writeRecord(_ record: DNSResourceRecord) throws(DNSError) {
        writeName(record.name)
        writeUInt16(record.type.rawValue)
        writeUInt16(record.recordClass.rawValue | (record.cacheFlush ? 0x8000 : 0))
        writeUInt32(record.ttl)
        let lengthOffset = bytes.count
        writeUInt16(0)
        switch record.data {
        case .a(let address): bytes.append(contentsOf: address.bytes)
        case .aaaa(let address): bytes.append(contentsOf: address.bytes)
        case .ptr(let name): writeName(name)
        case .srv(let srv):
            writeUInt16(srv.priority)
            writeUInt16(srv.weight)
            writeUInt16(srv.port)
            writeName(srv.target)
        case .txt(let strings):
            for string in strings {
                guard string.count <= 255 else { throw .invalidTXT("a string of \(string.count) bytes (limit 255)") }
                bytes.append(UInt8(string.count))
                bytes.append(contentsOf: string)
            }
        case .opaque(let type, let data):
            guard data.count <= Int(UInt16.max) else { throw .invalidRecordData(type: type.rawValue, reason: "data over 65,535 bytes") }
            bytes.append(contentsOf: data)
        }
        let length = bytes.count - lengthOffset - 2
        guard length <= Int(UInt16.max) else { throw .invalidRecordData(type: record.type.rawValue, reason: "data over 65,535 bytes") }
        bytes[lengthOffset] = UInt8(length >> 8)
        bytes[lengthOffset + 1] = UInt8(length & 0xFF)
    }
}
