import Foundation
import SecureCore

/// Export and import as JSON lines (docs/FORMATS.md, "SecureRecords export"): sealed values,
/// wrapped keys and blind-index tokens are copied as they are; nothing is decrypted.
extension RecordStore {
    struct ExportStoreLine: Codable {
        var type = "store"
        var format = "SFR1"
        var storeId: Data
        var currentKeyId: UInt32?
        var keys: [ExportKey]
    }

    struct ExportKey: Codable {
        var id: UInt32
        var wrapped: Data
    }

    struct ExportCollectionLine: Codable {
        var type = "collection"
        var name: String
        var schema: [String: FieldProtection]
    }

    struct ExportValue: Codable, Equatable {
        var string: String?
        var bytes: Data?
    }

    struct ExportRecordLine: Codable {
        var type = "record"
        var id: String
        var collection: String
        var keying: RecordKeying
        var keyId: UInt32?
        var clear: [String: ExportValue]
        var sealed: [String: Data]
        var blindIndexes: [String: Data]
        /// The record's authentication as stored (`StoredRecord.mac`); absent for none.
        var mac: Data?
    }

    struct LineType: Decodable {
        var type: String
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    static func line(_ value: some Encodable) -> String {
        String(decoding: (try? encoder().encode(value)) ?? Data(), as: UTF8.self)
    }

    /// Writes the store as JSON lines to `write` (one call per line, without the newline): a store
    /// line, one line per collection, one per record. Returns the number of records.
    @discardableResult
    public func export(_ write: (String) throws -> Void) throws(RecordsError) -> Int {
        guard let metadata = try storage.loadMetadata() else { throw .notARecordStore("the store is not initialized") }
        let collections = try storage.collections()
        var count = 0
        do {
            try write(Self.line(ExportStoreLine(
                storeId: metadata.storeId, currentKeyId: metadata.currentKeyId,
                keys: metadata.keys.map { ExportKey(id: $0.id, wrapped: $0.wrapped) })))
            for name in collections.keys.sorted() {
                try write(Self.line(ExportCollectionLine(name: name, schema: collections[name]?.fields ?? [:])))
            }
            var position: Int64 = 0
            while true {
                let (page, last) = try storage.allRecords(after: position, limit: 1000)
                if page.isEmpty { break }
                position = last
                for record in page {
                    try write(Self.line(ExportRecordLine(
                        id: record.id.uuidString.lowercased(), collection: record.collection, keying: record.keying, keyId: record.keyId,
                        clear: record.clear.mapValues {
                            switch $0 {
                            case .string(let s): ExportValue(string: s)
                            case .bytes(let b): ExportValue(bytes: b)
                            }
                        },
                        sealed: record.sealed, blindIndexes: record.blindIndexes, mac: record.mac)))
                }
                count += page.count
            }
        } catch let error as RecordsError {
            throw error
        } catch {
            throw .storage(StorageFailure(.export, "export: \(error)"))
        }
        return count
    }

    /// Writes the export (as `export(_:)`), each line ended by LF, to `output` through a 1 MiB
    /// buffer, so memory stays bounded for a store of any size. Returns the number of records.
    @discardableResult
    public func export(to output: borrowing FileOutput) throws(RecordsError) -> Int {
        var buffer = Data()
        let count = try export { line in
            buffer.append(contentsOf: line.utf8)
            buffer.append(UInt8(ascii: "\n"))
            if buffer.count >= 1 << 20 {
                try output.write(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        do { try output.write(buffer) } catch { throw .storage(StorageFailure(.export, "export: \(error)")) }
        return count
    }
}
