import Foundation
import SecureCore

/// Export and import as JSON lines (docs/FORMATS.md, "SecureRecords export"): sealed values,
/// wrapped keys and blind-index tokens are copied as they are; nothing is decrypted.
extension RecordStore {
    struct ExportStoreLine: Encodable, Sendable {
        var type = "store"
        var format = "SFR1"
        var storeId: Data
        var currentKeyId: UInt32?
        var keys: [ExportKey]
    }

    struct ExportKey: Encodable, Sendable {
        var id: UInt32
        var wrapped: Data
    }

    struct ExportCollectionLine: Encodable, Sendable {
        var type = "collection"
        var name: String
        var schema: [String: FieldProtection]
    }

    struct ExportValue: Encodable, Equatable, Sendable {
        var string: String?
        var bytes: Data?
    }

    struct ExportRecordLine: Encodable, Sendable {
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

    /// One line of an export, decoded once: its `type` member selects the rest. Decoded from
    /// `JSONSerialization`'s tree, which takes about half the time of `JSONDecoder` on these lines
    /// (the import's largest cost); members it does not know are ignored, as `Decodable` would.
    enum ExportLine: Sendable {
        case store(ExportStoreLine)
        case collection(ExportCollectionLine)
        case record(ExportRecordLine)
        case unknown(type: String)

        /// A line that is not a JSON object, has no string `type`, or does not decode as its type
        /// says; `what` names the line type expected (`LineType` when its type could not be read).
        struct Invalid: Error {
            let what: String
        }

        /// Decodes one line (UTF-8 JSON).
        init(json data: Data) throws(Invalid) {
            let tree: Any
            do { tree = try JSONSerialization.jsonObject(with: data) } catch { throw Invalid(what: "LineType") }
            guard let object = tree as? [String: Any], let type = object["type"] as? String else { throw Invalid(what: "LineType") }
            func line<T>(_: T.Type, _ decode: (JSONObject) throws(Invalid) -> T) throws(Invalid) -> T {
                do throws(Invalid) { return try decode(JSONObject(object)) } catch { throw Invalid(what: "\(T.self)") }
            }
            switch type {
            case "store":
                self = .store(try line(ExportStoreLine.self) { (o) throws(Invalid) in
                    ExportStoreLine(
                        format: try o.string("format"), storeId: try o.bytes("storeId"), currentKeyId: try o.optional("currentKeyId", JSONObject.uint32),
                        keys: try o.array("keys").map { (key) throws(Invalid) in
                            let key = try JSONObject.object(key)
                            return ExportKey(id: try JSONObject.uint32(try key.member("id")), wrapped: try key.bytes("wrapped"))
                        })
                })
            case "collection":
                self = .collection(try line(ExportCollectionLine.self) { (o) throws(Invalid) in
                    ExportCollectionLine(
                        name: try o.string("name"),
                        schema: try o.dictionary("schema") { (value) throws(Invalid) in
                            guard let protection = (value as? String).flatMap(FieldProtection.init(rawValue:)) else { throw Invalid(what: "") }
                            return protection
                        })
                })
            case "record":
                self = .record(try line(ExportRecordLine.self) { (o) throws(Invalid) in
                    guard let keying = RecordKeying(rawValue: try o.string("keying")) else { throw Invalid(what: "") }
                    return ExportRecordLine(
                        id: try o.string("id"), collection: try o.string("collection"), keying: keying,
                        keyId: try o.optional("keyId", JSONObject.uint32),
                        clear: try o.dictionary("clear") { (value) throws(Invalid) in
                            let value = try JSONObject.object(value)
                            return ExportValue(string: try value.optional("string", JSONObject.string), bytes: try value.optional("bytes", JSONObject.bytes))
                        },
                        sealed: try o.dictionary("sealed", JSONObject.bytes), blindIndexes: try o.dictionary("blindIndexes", JSONObject.bytes),
                        mac: try o.optional("mac", JSONObject.bytes))
                })
            default:
                self = .unknown(type: type)
            }
        }
    }

    /// A JSON object from `JSONSerialization`, read member by member by the types of an export:
    /// `null` or absence is nil for an optional member (as with `Decodable`), bytes are base64,
    /// and a number is an integer written as one, in range (stricter than `JSONDecoder`, which
    /// takes `1.0` for 1; the export writes plain integers).
    struct JSONObject {
        let members: [String: Any]

        init(_ members: [String: Any]) {
            self.members = members
        }

        static func object(_ value: Any) throws(ExportLine.Invalid) -> JSONObject {
            guard let members = value as? [String: Any] else { throw ExportLine.Invalid(what: "") }
            return JSONObject(members)
        }

        static func string(_ value: Any) throws(ExportLine.Invalid) -> String {
            guard let string = value as? String else { throw ExportLine.Invalid(what: "") }
            return string
        }

        static func bytes(_ value: Any) throws(ExportLine.Invalid) -> Data {
            guard let data = (value as? String).flatMap({ Data(base64Encoded: $0) }) else { throw ExportLine.Invalid(what: "") }
            return data
        }

        /// An integer written as one: `JSONSerialization` gives every number and boolean as an
        /// `NSNumber`, whose type code tells a boolean (`c`) and a fraction or exponent (`d`) apart.
        static func uint32(_ value: Any) throws(ExportLine.Invalid) -> UInt32 {
            guard let number = value as? NSNumber, !"cdf".utf8.contains(UInt8(bitPattern: number.objCType.pointee)),
                let result = UInt32(exactly: number.int64Value)
            else { throw ExportLine.Invalid(what: "") }
            return result
        }

        func member(_ key: String) throws(ExportLine.Invalid) -> Any {
            guard let value = members[key], !(value is NSNull) else { throw ExportLine.Invalid(what: "") }
            return value
        }

        func optional<T>(_ key: String, _ decode: (Any) throws(ExportLine.Invalid) -> T) throws(ExportLine.Invalid) -> T? {
            guard let value = members[key], !(value is NSNull) else { return nil }
            return try decode(value)
        }

        func string(_ key: String) throws(ExportLine.Invalid) -> String { try Self.string(try member(key)) }
        func bytes(_ key: String) throws(ExportLine.Invalid) -> Data { try Self.bytes(try member(key)) }

        func array(_ key: String) throws(ExportLine.Invalid) -> [Any] {
            guard let array = try member(key) as? [Any] else { throw ExportLine.Invalid(what: "") }
            return array
        }

        func dictionary<T>(_ key: String, _ decode: (Any) throws(ExportLine.Invalid) -> T) throws(ExportLine.Invalid) -> [String: T] {
            var result: [String: T] = [:]
            for (name, value) in try Self.object(try member(key)).members { result[name] = try decode(value) }
            return result
        }
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
    /// line, one line per collection, one per record. Returns the number of records. The records
    /// are read a page at a time: a record under a key or in a collection the store line and the
    /// collection lines do not hold (a key rotation or a new collection since the export began)
    /// fails the export (`storage`, kind `export`) rather than produce one that no import takes.
    @discardableResult
    public func export(_ write: (String) throws -> Void) throws(RecordsError) -> Int {
        guard let metadata = try storage.loadMetadata() else { throw .notARecordStore("the store is not initialized") }
        let collections = try storage.collections()
        let keyIds = Set(metadata.keys.map(\.id))
        func changedDuringExport(_ record: StoredRecord, _ what: String) -> RecordsError {
            .storage(StorageFailure(.export, "the store changed during the export: record \(record.id) is \(what), which the store did not hold when the export began (a key rotation or a new collection); export again"))
        }
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
                    if let keyId = record.keyId, !keyIds.contains(keyId) { throw changedDuringExport(record, "under store key \(keyId)") }
                    if collections[record.collection] == nil { throw changedDuringExport(record, "in collection '\(record.collection)'") }
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
