import Foundation

/// A structural check of a binary property list (`bplist00`, Apple's CFBinaryPList format) before
/// Foundation decodes it: every object must lie inside the object area and every reference must
/// name an object. Foundation on Linux traps (a crash, not an error) on an object whose length runs
/// past the end of the data (a UTF-16 string of 57 characters in a 116-byte file, found by
/// Fuzz/FuzzLegacyKeychain), so such a file has to be refused before it gets there.
///
/// The format: the 8-byte header; the objects, each a marker byte (type in the high four bits, a
/// size in the low four, or 0xF and an integer object holding the size) and its bytes; the offset
/// table (one offset per object); the 32-byte trailer (offset size, reference size, object count,
/// top object, offset table offset).
enum BinaryPropertyListCheck {
    /// Whether `data` is a binary property list whose objects and references all stay in bounds.
    static func isWellFormed(_ data: Data) -> Bool {
        let bytes = [UInt8](data)
        guard bytes.count >= 8 + 32, bytes.starts(with: Array("bplist00".utf8)) else { return false }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6]), referenceSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize),
            let objectCount = integer(bytes, at: trailer + 8, size: 8), let top = integer(bytes, at: trailer + 16, size: 8),
            let tableOffset = integer(bytes, at: trailer + 24, size: 8),
            objectCount >= 1, top < objectCount, tableOffset >= 8, tableOffset <= trailer,
            objectCount <= (trailer - tableOffset) / offsetSize
        else { return false }
        for index in 0..<objectCount {
            guard let offset = integer(bytes, at: tableOffset + index * offsetSize, size: offsetSize), offset >= 8, offset < tableOffset,
                objectIsWellFormed(bytes, at: offset, end: tableOffset, referenceSize: referenceSize, objectCount: objectCount)
            else { return false }
        }
        return true
    }

    /// Whether the object at `offset` ends at or before `end`, and its references name objects.
    private static func objectIsWellFormed(_ bytes: [UInt8], at offset: Int, end: Int, referenceSize: Int, objectCount: Int) -> Bool {
        let marker = bytes[offset], info = Int(marker & 0x0F)
        var position = offset + 1
        /// The count in the marker, or in the integer object that follows it.
        func count() -> Int? {
            guard info == 0x0F else { return info }
            guard position < end, bytes[position] & 0xF0 == 0x10 else { return nil }
            let size = 1 << Int(bytes[position] & 0x0F)
            guard size <= 8, let value = integer(bytes, at: position + 1, size: size), position + 1 + size <= end else { return nil }
            position += 1 + size
            return value
        }
        /// Whether `length` more bytes fit before `end`.
        func fits(_ length: Int?) -> Bool {
            guard let length, length >= 0, length <= end - position else { return false }
            return true
        }
        /// Whether `references` references of `referenceSize` bytes fit and each names an object.
        func referencesFit(_ references: Int?) -> Bool {
            guard let references, references >= 0, references <= (end - position) / referenceSize else { return false }
            for index in 0..<references {
                guard let reference = integer(bytes, at: position + index * referenceSize, size: referenceSize), reference < objectCount else {
                    return false
                }
            }
            return true
        }
        switch marker >> 4 {
        case 0x0: return [0x00, 0x08, 0x09, 0x0F].contains(marker)
        case 0x1, 0x2: return info <= 4 && fits(1 << info)
        case 0x3: return marker == 0x33 && fits(8)
        case 0x4, 0x5: return fits(count())
        case 0x6: return fits(count().flatMap { $0 <= Int.max / 2 ? $0 * 2 : nil })
        case 0x8: return fits(info + 1)
        case 0xA, 0xB, 0xC: return referencesFit(count())
        case 0xD: return referencesFit(count().flatMap { $0 <= Int.max / 2 ? $0 * 2 : nil })
        default: return false
        }
    }

    /// The big-endian unsigned integer of `size` bytes at `offset`, if it fits `Int` and the data.
    private static func integer(_ bytes: [UInt8], at offset: Int, size: Int) -> Int? {
        guard offset >= 0, size <= bytes.count, offset <= bytes.count - size else { return nil }
        var value: UInt64 = 0
        for byte in bytes[offset..<offset + size] { value = value << 8 | UInt64(byte) }
        return value <= UInt64(Int.max) ? Int(value) : nil
    }
}
