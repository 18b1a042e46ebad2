import Foundation
import NIOCore
import SecureRecords

/// The rows of a batch of records in `COPY ... FROM STDIN` text format, one buffer per table, for
/// bulk loading (`PostgresRecordStorage.copyRecords`).
///
/// The text format (PostgreSQL's `COPY` reference): one line per row, columns separated by a tab,
/// `\N` for NULL, and a backslash, tab, newline or carriage return inside a value written as `\\`,
/// `\t`, `\n`, `\r`. A `bytea` value is its hex input form `\x<hex>`, whose backslash is itself
/// escaped (`\\x`). The rows are the same as `Columns` binds for `INSERT ... unnest`.
struct PostgresCopyRows {
    /// The columns of each table's rows, in the order written.
    static let recordColumns = ["id", "collection", "keying", "key_id", "fts", "mac"]
    static let clearColumns = ["record_id", "name", "kind", "value"]
    static let sealedColumns = ["record_id", "name", "sealed"]
    static let indexColumns = ["record_id", "name", "key_id", "token"]

    var records = ByteBuffer()
    var clear = ByteBuffer()
    var sealed = ByteBuffer()
    var blindIndexes = ByteBuffer()
    /// The first record's id (named by a unique violation the server reports without one).
    let firstId: UUID

    /// The most bytes of rows sent as one group (one copy into each table), roughly: a bound on
    /// the memory of a group and on the size of its buffers, whatever the size of its values.
    static let groupBytes = 32 << 20

    /// `records` in groups of at most about `groupBytes` of rows each, in order (a record larger
    /// than that alone).
    static func groups(_ records: [StoredRecord]) -> [ArraySlice<StoredRecord>] {
        var groups: [ArraySlice<StoredRecord>] = []
        var start = records.startIndex, bytes = 0
        for (index, record) in zip(records.indices, records) {
            // Each byte of a value is two hex digits; a row's other columns are under 200 bytes.
            var size = 200 * (1 + record.clear.count + record.sealed.count + record.blindIndexes.count)
            for value in record.clear.values {
                switch value {
                case .string(let s): size += 2 * s.utf8.count
                case .bytes(let b): size += 2 * b.count
                }
            }
            size += 2 * (record.sealed.values.reduce(0) { $0 + $1.count } + record.blindIndexes.values.reduce(0) { $0 + $1.count })
            size += 2 * (record.mac?.count ?? 0) + 4 * record.collection.utf8.count
            if bytes > 0 && bytes + size > groupBytes {
                groups.append(records[start..<index])
                start = index
                bytes = 0
            }
            bytes += size
        }
        if start < records.endIndex { groups.append(records[start...]) }
        return groups
    }

    /// The rows of `batch`, which must not be empty.
    init(_ batch: some Collection<StoredRecord>) {
        firstId = batch.first!.id
        records.reserveCapacity(batch.count * 256)
        for record in batch {
            records.writeUUID(record.id)
            records.writeTab()
            records.writeCopyText(record.collection)
            records.writeTab()
            records.writeStaticString(record.keying == .storeKey ? "0" : "1")
            records.writeTab()
            if let keyId = record.keyId { records.writeString(String(keyId)) } else { records.writeNull() }
            records.writeTab()
            records.writeTSVector(record.fullText)
            records.writeTab()
            if let mac = record.mac { records.writeByteaHex(mac) } else { records.writeNull() }
            records.writeNewline()
            for (name, value) in record.clear {
                clear.writeFieldKey(record.id, name)
                switch value {
                case .string(let s):
                    clear.writeStaticString("1\t")
                    clear.writeByteaHex(s.utf8)
                case .bytes(let b):
                    clear.writeStaticString("2\t")
                    clear.writeByteaHex(b)
                }
                clear.writeNewline()
            }
            for (name, value) in record.sealed {
                sealed.writeFieldKey(record.id, name)
                sealed.writeByteaHex(value)
                sealed.writeNewline()
            }
            for (name, token) in record.blindIndexes {
                blindIndexes.writeFieldKey(record.id, name)
                blindIndexes.writeString(String(record.keyId ?? 0))
                blindIndexes.writeTab()
                blindIndexes.writeByteaHex(token)
                blindIndexes.writeNewline()
            }
        }
    }
}

private let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

extension ByteBuffer {
    fileprivate mutating func writeTab() { writeInteger(UInt8(ascii: "\t")) }
    fileprivate mutating func writeNewline() { writeInteger(UInt8(ascii: "\n")) }
    fileprivate mutating func writeNull() { writeStaticString("\\N") }

    /// `bytes` as hex, each byte two lowercase digits.
    fileprivate mutating func writeHex(_ bytes: some Sequence<UInt8>, count: Int) {
        writeWithUnsafeMutableBytes(minimumWritableBytes: 2 * count) { buffer in
            var i = 0
            for byte in bytes {
                buffer[i] = hexDigits[Int(byte >> 4)]
                buffer[i + 1] = hexDigits[Int(byte & 0x0F)]
                i += 2
            }
            return i
        }
    }

    /// A `bytea` value in hex input form, its backslash escaped for `COPY` text: `\\x<hex>`.
    fileprivate mutating func writeByteaHex(_ data: Data) {
        writeStaticString("\\\\x")
        data.withUnsafeBytes { writeHex($0, count: $0.count) }
    }

    fileprivate mutating func writeByteaHex(_ utf8: String.UTF8View) {
        writeStaticString("\\\\x")
        writeHex(utf8, count: utf8.count)
    }

    /// The `tsvector` of `text` (`PostgresFullText.tsvector`), written as it is built.
    fileprivate mutating func writeTSVector(_ text: String) {
        for (index, lexeme) in PostgresFullText.lexemes(text).enumerated() {
            if index > 0 { writeInteger(UInt8(ascii: " ")) }
            writeCopyText(PostgresFullText.quote(lexeme.term))
            for (n, position) in lexeme.positions.enumerated() {
                writeInteger(UInt8(ascii: n == 0 ? ":" : ","))
                writeString(String(position))
            }
        }
    }

    /// A field row's first two columns, `record_id` and `name`, each followed by a tab.
    fileprivate mutating func writeFieldKey(_ id: UUID, _ name: String) {
        writeUUID(id)
        writeTab()
        writeCopyText(name)
        writeTab()
    }

    /// A UUID in its canonical lowercase text form.
    fileprivate mutating func writeUUID(_ id: UUID) {
        withUnsafeBytes(of: id.uuid) { bytes in
            for (start, end) in [(0, 4), (4, 6), (6, 8), (8, 10), (10, 16)] {
                if start > 0 { writeInteger(UInt8(ascii: "-")) }
                writeHex(bytes[start..<end], count: end - start)
            }
        }
    }

    /// A text value with the characters `COPY` text gives a meaning escaped.
    fileprivate mutating func writeCopyText(_ text: String) {
        let utf8 = text.utf8
        guard utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") })
        else {
            writeString(text)
            return
        }
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\\"): writeStaticString("\\\\")
            case UInt8(ascii: "\t"): writeStaticString("\\t")
            case UInt8(ascii: "\n"): writeStaticString("\\n")
            case UInt8(ascii: "\r"): writeStaticString("\\r")
            default: writeInteger(byte)
            }
        }
    }
}
