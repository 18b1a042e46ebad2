import Foundation
import NIOCore
import SecureRecords

/// The rows of a batch of records in `COPY ... FROM STDIN` binary format, one buffer per table,
/// for bulk loading (`PostgresRecordStorage.copyRecords`).
///
/// The binary format (PostgreSQL's `COPY` reference, "Binary Format"): an 11-byte signature, a
/// 32-bit flags field and a 32-bit header extension length (both zero); per row a 16-bit column
/// count, then each column as a 32-bit length (-1 for NULL) and its value in the type's binary
/// form (`uuid` 16 bytes, `smallint` and `bigint` big-endian, `text` and `bytea` as they are,
/// `tsvector` as `tsvectorsend` writes it); a 16-bit -1 ends the data. Binary rather than text:
/// the server neither parses hex nor unescapes text, and a `bytea` value is sent at half the size
/// (the load times, text and binary: Benchmarks/README.md, session 21). The rows are the same as
/// `Columns` binds for `INSERT ... unnest`.
struct PostgresCopyRows {
    /// The columns of each table's rows, in the order written.
    static let recordColumns = ["id", "collection", "keying", "key_id", "fts", "mac"]
    static let clearColumns = ["record_id", "name", "kind", "value"]
    static let sealedColumns = ["record_id", "name", "sealed"]
    static let indexColumns = ["record_id", "name", "key_id", "token"]

    /// Each table's complete copy data (signature to end marker), or an empty buffer for no rows.
    private(set) var records = ByteBuffer()
    private(set) var clear = ByteBuffer()
    private(set) var sealed = ByteBuffer()
    private(set) var blindIndexes = ByteBuffer()
    /// The first record's id (named by a unique violation the server reports without one).
    let firstId: UUID

    /// The rows of `batch`, which must not be empty.
    init(_ batch: some Collection<StoredRecord>) {
        firstId = batch.first!.id
        records.reserveCapacity(batch.count * 160)
        var clearRows = 0, sealedRows = 0, indexRows = 0
        for buffer in [\Self.records, \.clear, \.sealed, \.blindIndexes] as [WritableKeyPath<Self, ByteBuffer>] {
            self[keyPath: buffer].writeCopyHeader()
        }
        for record in batch {
            records.writeInteger(Int16(Self.recordColumns.count))
            records.writeColumn { $0.writeUUID(record.id) }
            records.writeColumn { $0.writeString(record.collection) }
            records.writeColumn { $0.writeInteger(Int16(record.keying == .storeKey ? 0 : 1)) }
            if let keyId = record.keyId { records.writeColumn { $0.writeInteger(Int64(keyId)) } } else { records.writeNullColumn() }
            records.writeColumn { $0.writeTSVector(record.fullText) }
            if let mac = record.mac { records.writeColumn { $0.writeBytes(mac) } } else { records.writeNullColumn() }
            for (name, value) in record.clear {
                clearRows += 1
                clear.writeFieldKey(columns: Self.clearColumns.count, record.id, name)
                switch value {
                case .string(let s):
                    clear.writeColumn { $0.writeInteger(Int16(1)) }
                    clear.writeColumn { $0.writeString(s) }
                case .bytes(let b):
                    clear.writeColumn { $0.writeInteger(Int16(2)) }
                    clear.writeColumn { $0.writeBytes(b) }
                }
            }
            for (name, value) in record.sealed {
                sealedRows += 1
                sealed.writeFieldKey(columns: Self.sealedColumns.count, record.id, name)
                sealed.writeColumn { $0.writeBytes(value) }
            }
            for (name, token) in record.blindIndexes {
                indexRows += 1
                blindIndexes.writeFieldKey(columns: Self.indexColumns.count, record.id, name)
                blindIndexes.writeColumn { $0.writeInteger(Int64(record.keyId ?? 0)) }
                blindIndexes.writeColumn { $0.writeBytes(token) }
            }
        }
        records.writeCopyTrailer()
        for (buffer, rows) in [(\Self.clear, clearRows), (\.sealed, sealedRows), (\.blindIndexes, indexRows)] as [(WritableKeyPath<Self, ByteBuffer>, Int)] {
            if rows > 0 { self[keyPath: buffer].writeCopyTrailer() } else { self[keyPath: buffer].clear() }
        }
    }
}

extension ByteBuffer {
    /// The binary copy format's signature, flags (none) and header extension length (none).
    fileprivate mutating func writeCopyHeader() {
        writeBytes([0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00])  // "PGCOPY\n\377\r\n\0"
        writeInteger(Int32(0))
        writeInteger(Int32(0))
    }

    /// The end of the copy data: a column count of -1.
    fileprivate mutating func writeCopyTrailer() { writeInteger(Int16(-1)) }

    fileprivate mutating func writeNullColumn() { writeInteger(Int32(-1)) }

    /// A column: its length, then the value `write` writes.
    fileprivate mutating func writeColumn(_ write: (inout ByteBuffer) -> Void) {
        let lengthIndex = writerIndex
        writeInteger(Int32(0))
        write(&self)
        setInteger(Int32(writerIndex - lengthIndex - 4), at: lengthIndex)
    }

    /// A field row's column count and first two columns, `record_id` and `name`.
    fileprivate mutating func writeFieldKey(columns: Int, _ id: UUID, _ name: String) {
        writeInteger(Int16(columns))
        writeColumn { $0.writeUUID(id) }
        writeColumn { $0.writeString(name) }
    }

    /// A `uuid` in binary form: its 16 bytes.
    fileprivate mutating func writeUUID(_ id: UUID) {
        withUnsafeBytes(of: id.uuid) { _ = writeBytes($0) }
    }

    /// The `tsvector` of `text` in binary form (`tsvectorsend`): the lexeme count; each lexeme's
    /// text ended by a zero byte, its position count and positions (weight D: no weight bits).
    /// The lexemes go in the server's order (bytewise), so it need not sort them. The binary input
    /// takes them as they come, without the text input's repairs (merging repeated lexemes,
    /// capping positions): `lexemes` gives distinct lexemes with ascending positions, and the
    /// limits are checked here: no zero byte, at most 2,047 bytes, 1 to 256 positions below
    /// 16,384 (what `FullText.indexedTerms` gives; anything else is a bug here, not bad input).
    fileprivate mutating func writeTSVector(_ text: String) {
        let lexemes = PostgresFullText.lexemes(text).sorted { $0.term.utf8.lexicographicallyPrecedes($1.term.utf8) }
        writeInteger(Int32(lexemes.count))
        for (term, positions) in lexemes {
            precondition(
                term.utf8.count <= 2_047 && !term.utf8.contains(0) && (1...256).contains(positions.count) && positions.last! < 16_384,
                "a lexeme outside the tsvector limits")
            writeString(term)
            writeInteger(UInt8(0))
            writeInteger(UInt16(positions.count))
            for position in positions { writeInteger(UInt16(position)) }
        }
    }
}
