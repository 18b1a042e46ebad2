import Foundation
import SecureCore

/// Import of JSON lines written by `export` (docs/FORMATS.md, "SecureRecords export"), streamed:
/// each line is checked and its record inserted in batches inside the storage's one import
/// transaction, so memory stays bounded whatever the size of the export, and a bad line anywhere
/// rolls everything back.
extension RecordStore {
    /// How far an import has gone, reported after each batch.
    public struct ImportProgress: Sendable, Equatable {
        /// Records inserted so far (in the import's transaction: none is kept if the import fails).
        public let records: Int
        /// The part of the input read so far, from 0 to 1, when its size is known (a regular file).
        public let fractionRead: Double?
    }

    /// Records inserted per statement batch.
    static let importBatchSize = 1_000
    /// Lines decoded in parallel: a group of `importBatchSize` lines per core, at most this many
    /// cores, and a group closes early at `importGroupBytes` of input, so that what an import holds
    /// (a group of lines, their decoded records, and the records checked before them) stays bounded
    /// whatever the machine and the size of the records.
    static let importMaximumWidth = 8
    static let importGroupBytes = 32 << 20

    /// Imports JSON lines written by `export` into this store, all or nothing: the export must be of
    /// this store (same store id; an empty, new store adopts nothing and refuses: sealed values only
    /// open in their own store, so import into the store file the export came from or into a
    /// store created with `RecordStore(importing:)`). A line that does not check throws
    /// `invalidImport` naming it, a record id that exists (or repeats) `duplicateRecord`, and
    /// nothing is imported. Returns the number of records imported.
    /// Time is linear in the input; `lines` is iterated again if the storage runs the transaction
    /// again (PostgreSQL after a lost connection), so it must be a multi-pass sequence.
    @discardableResult
    public func importLines<Lines: Sequence>(
        _ lines: Lines, progress: ((ImportProgress) -> Void)? = nil
    ) throws(RecordsError) -> Int where Lines.Element: StringProtocol {
        try runImport(SequenceLines(lines: lines), progress: progress)
    }

    /// Imports the export in the file at `path` as `importLines` does, reading it in chunks: memory
    /// stays bounded for an export of any size.
    @discardableResult
    public func importFile(atPath path: String, progress: ((ImportProgress) -> Void)? = nil) throws(RecordsError) -> Int {
        try runImport(FileLines(path: path), progress: progress)
    }

    /// Creates the store an export came from in empty `storage` (same store id and wrapped keys),
    /// then imports its records, in one transaction: an import that fails leaves `storage` as it
    /// was (a storage that held the exported store already gets the import as `importLines` does).
    public convenience init<Lines: Sequence>(
        storage: any RecordStorage, importing lines: Lines, configuration: Configuration = .init()
    ) throws(RecordsError) where Lines.Element: StringProtocol {
        try self.init(storage: storage, importing: SequenceLines(lines: lines), configuration: configuration, progress: nil)
    }

    /// Creates the store the export in the file at `path` came from in empty `storage`, then
    /// imports its records, reading the file in chunks, in one transaction as
    /// `init(storage:importing:configuration:)` does.
    public convenience init(
        storage: any RecordStorage, importingFile path: String, configuration: Configuration = .init(),
        progress: ((ImportProgress) -> Void)? = nil
    ) throws(RecordsError) {
        try self.init(storage: storage, importing: FileLines(path: path), configuration: configuration, progress: progress)
    }

    private convenience init(
        storage: any RecordStorage, importing source: some ImportLineSource, configuration: Configuration,
        progress: ((ImportProgress) -> Void)?
    ) throws(RecordsError) {
        // The store line comes first: read up to it for the store id.
        var storeId: Data?
        var parser = ImportParser()
        try source.forEachLine { (number, line, _) throws(RecordsError) in
            switch try parser.parse(number, line) {
            case .blank: return true
            case .store(let id, _, _): storeId = id
            default: break
            }
            return false
        }
        guard let storeId else { throw .invalidImport(line: 1, reason: "no store line") }
        // A store there must be the exported one (checked with its store line); an empty storage
        // gets the store in the import's transaction, so a failed import leaves it empty.
        try self.init(storage: storage, configuration: configuration, importing: storeId)
        _ = try runImport(source, progress: progress)
    }

    /// Checks every line of an export as `importLines` does, writing nothing, and returns the
    /// number of records it holds. For the fuzz target FuzzRecords.
    @_spi(Fuzzing) public static func validateExport(_ lines: [String]) throws(RecordsError) -> Int {
        var parser = ImportParser()
        var count = 0
        try SequenceLines(lines: lines).forEachLine { (number, line, _) throws(RecordsError) in
            if case .record = try parser.parse(number, line) { count += 1 }
            return true
        }
        guard parser.sawStore else { throw .invalidImport(line: 1, reason: "no store line") }
        return count
    }

    /// Reads lines in groups (`importBatchSize` per core, see `importMaximumWidth`). Each group is
    /// decoded on every core while the records checked before it are inserted alongside, in whole
    /// batches (the storage writes on one core's turn); then the group is checked in order on the
    /// calling thread, so the first bad line is the one reported, and store and collection lines
    /// reach the writer before the records after them. `progress` is called on the calling thread.
    /// Of an import that fails in more than one way, one failure is reported (an invalid line
    /// may be reported before a duplicate record earlier in the input); nothing is imported.
    private func runImport(_ source: some ImportLineSource, progress: ((ImportProgress) -> Void)?) throws(RecordsError) -> Int {
        var imported = 0
        let width = min(ProcessInfo.processInfo.activeProcessorCount, Self.importMaximumWidth)
        let batchSize = Self.importBatchSize
        try storage.importAll { (writer) throws(RecordsError) in
            // Run again from the start if the storage repeats the transaction.
            var parser = ImportParser()
            var group: [(number: Int, data: Data, fraction: Double?)] = []
            group.reserveCapacity(width * batchSize)
            var groupBytes = 0
            // Records checked and not yet inserted, each with the part of the input read at its line.
            var checked: [(record: StoredRecord, fraction: Double?)] = []
            imported = 0
            // Inserts in batches; returns the progress after each, for the calling thread to report.
            func insert(_ records: ArraySlice<(record: StoredRecord, fraction: Double?)>) throws(RecordsError) -> [ImportProgress] {
                var reports: [ImportProgress] = []
                for start in stride(from: records.startIndex, to: records.endIndex, by: batchSize) {
                    let batch = records[start..<min(records.endIndex, start + batchSize)]
                    try writer.insert(batch.map(\.record))
                    imported += batch.count
                    reports.append(ImportProgress(records: imported, fractionRead: batch.last?.fraction))
                }
                return reports
            }
            func decodeAndCheckGroup() throws(RecordsError) {
                let lines = group
                group.removeAll(keepingCapacity: true)
                groupBytes = 0
                let ready = checked.prefix(checked.count / batchSize * batchSize)
                checked.removeFirst(ready.count)
                let chunk = max(1, (lines.count + width - 1) / width)
                let chunks = (lines.count + chunk - 1) / chunk
                let decoded = ResultSlots<[Result<RecordStore.ExportLine?, RecordsError>]>(count: chunks, initialValue: [])
                var reports: [ImportProgress] = []
                try ForkJoin.run(chunks, alongside: { () throws(RecordsError) in reports = try insert(ready) }) { i in
                    decoded[i] = lines[i * chunk..<min(lines.count, (i + 1) * chunk)].map { ImportParser.decode($0.number, $0.data) }
                }
                if let progress { reports.forEach(progress) }
                var index = 0
                for i in 0..<chunks {
                    for result in decoded[i] {
                        let line = lines[index]
                        index += 1
                        switch try parser.check(line.number, result.get()) {
                        case .blank:
                            break
                        case .store(let id, let keys, let currentKeyId):
                            guard id == storeId else { throw .storeMismatch }
                            try writer.addStore(id, keys: keys, currentKeyId: currentKeyId)
                        case .collection(let name, let schema):
                            try writer.addCollection(name, schema: schema)
                        case .record(let record):
                            checked.append((record, line.fraction))
                        }
                    }
                }
            }
            try source.forEachLine { (number, line, fraction) throws(RecordsError) in
                group.append((number, line, fraction))
                groupBytes += line.count
                if group.count == width * batchSize || groupBytes >= Self.importGroupBytes { try decodeAndCheckGroup() }
                return true
            }
            try decodeAndCheckGroup()
            guard parser.sawStore else { throw .invalidImport(line: 1, reason: "no store line") }
            if !checked.isEmpty { checked[checked.count - 1].fraction = 1 }
            let reports = try insert(checked[...])
            if let progress { reports.forEach(progress) }
        }
        return imported
    }
}

/// The lines of an export, each as its bytes with its number (from 1) and, when known, the part
/// of the input read so far. `forEachLine` reads from the start each time it is called; `body`
/// returns false to stop.
protocol ImportLineSource {
    func forEachLine(_ body: (Int, Data, Double?) throws(RecordsError) -> Bool) throws(RecordsError)
}

/// Lines already split, in memory.
struct SequenceLines<Lines: Sequence>: ImportLineSource where Lines.Element: StringProtocol {
    let lines: Lines

    func forEachLine(_ body: (Int, Data, Double?) throws(RecordsError) -> Bool) throws(RecordsError) {
        for (index, line) in lines.enumerated() {
            guard line.utf8.count <= FileLines.maximumLineBytes else { throw FileLines.tooLong(line: index + 1) }
            guard try body(index + 1, Data(line.utf8), nil) else { return }
        }
    }
}

/// The lines of a file, read in 1 MiB chunks; a line ends at LF (a CR before it is dropped), and
/// the last one may lack it.
struct FileLines: ImportLineSource {
    let path: String
    /// The longest line accepted: the export of a record of
    /// `RecordStore.Configuration.maximumRecordBytesCeiling` (128 MiB), each byte escaped.
    static let maximumLineBytes = 1 << 30

    /// The refusal of line `line`, longer than `maximumLineBytes` (on every import path).
    static func tooLong(line: Int) -> RecordsError {
        .invalidImport(line: line, reason: "longer than \(maximumLineBytes) bytes")
    }

    func forEachLine(_ body: (Int, Data, Double?) throws(RecordsError) -> Bool) throws(RecordsError) {
        let input: FileInput
        do { input = try FileInput(path: path) } catch { throw .unreadableImport(error) }
        var status = stat()
        let size: Double? = fstat(input.descriptor, &status) == 0 && status.st_mode & S_IFMT == S_IFREG ? Double(status.st_size) : nil
        var pending = Data()
        var consumed = 0, number = 0
        func emit(_ line: Data) throws(RecordsError) -> Bool {
            number += 1
            consumed += line.count + 1
            var line = line
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            return try body(number, line, size.map { $0 > 0 ? min(1, Double(consumed) / $0) : 1 })
        }
        while true {
            let chunk: Data
            do { chunk = try input.read(upTo: 1 << 20) } catch { throw .unreadableImport(error) }
            // What was pending holds no newline: only the new chunk is searched, so a long line
            // costs one pass over its bytes, not one per chunk it spans.
            let searched = pending.count
            pending.append(chunk)
            var start = pending.startIndex
            var searchFrom = pending.startIndex + searched
            while let end = Self.newline(in: pending, from: searchFrom) {
                guard try emit(Data(pending[start..<end])) else { return }
                start = end + 1
                searchFrom = start
            }
            pending.removeSubrange(pending.startIndex..<start)
            guard pending.count <= Self.maximumLineBytes else {
                throw Self.tooLong(line: number + 1)
            }
            if chunk.isEmpty {
                if !pending.isEmpty { _ = try emit(pending) }
                return
            }
        }
    }

    /// The index of the first LF in `data` at or after `start` (`memchr`: a byte loop over `Data`
    /// is several times slower).
    static func newline(in data: Data, from start: Data.Index) -> Data.Index? {
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Data.Index? in
            let offset = start - data.startIndex
            guard offset < bytes.count, let base = bytes.baseAddress,
                let found = memchr(base + offset, Int32(UInt8(ascii: "\n")), bytes.count - offset)
            else { return nil }
            return data.startIndex + (base.distance(to: UnsafeRawPointer(found)))
        }
    }
}

/// Checks export lines one at a time, in order: the store line first, each collection declared
/// before its records.
struct ImportParser {
    enum Line {
        case blank
        case store(storeId: Data, keys: [WrappedStoreKey], currentKeyId: UInt32?)
        case collection(String, RecordSchema)
        case record(StoredRecord)
    }

    private var keyIds: Set<UInt32> = []
    private var collections: [String: RecordSchema] = [:]
    private(set) var sawStore = false

    /// Decodes and checks one line.
    mutating func parse(_ number: Int, _ data: Data) throws(RecordsError) -> Line {
        try check(number, Self.decode(number, data).get())
    }

    /// Decodes line `number` alone, without the checks that depend on the lines before it (so
    /// lines can be decoded in parallel): nil for a blank line.
    static func decode(_ number: Int, _ data: Data) -> Result<RecordStore.ExportLine?, RecordsError> {
        if data.allSatisfy({ $0 == 0x20 || (0x09...0x0D).contains($0) }) { return .success(nil) }
        do throws(RecordStore.ExportLine.Invalid) {
            return .success(try RecordStore.ExportLine(json: data))
        } catch {
            return .failure(.invalidImport(line: number, reason: "not a valid \(error.what) line"))
        }
    }

    /// Checks decoded line `number` against the lines before it, in order.
    mutating func check(_ number: Int, _ line: RecordStore.ExportLine?) throws(RecordsError) -> Line {
        switch line {
        case nil:
            return .blank
        case .store(let store):
            guard !sawStore else { throw .invalidImport(line: number, reason: "a second store line") }
            guard store.format == "SFR1", store.storeId.count == 16 else {
                throw .invalidImport(line: number, reason: "unknown format or store id length")
            }
            let keys = store.keys.map { WrappedStoreKey(id: $0.id, wrapped: $0.wrapped) }
            keyIds = Set(keys.map(\.id))
            guard keyIds.count == keys.count else { throw .invalidImport(line: number, reason: "duplicate key id") }
            if let current = store.currentKeyId, !keyIds.contains(current) {
                throw .invalidImport(line: number, reason: "the current key is missing")
            }
            if let current = store.currentKeyId, let latest = keyIds.max(), latest > current {
                throw .invalidImport(line: number, reason: "the current key \(current) is older than key \(latest) (rotate the store key, then export again)")
            }
            sawStore = true
            return .store(storeId: store.storeId, keys: keys, currentKeyId: store.currentKeyId)
        case .collection(let line):
            guard sawStore else { throw .invalidImport(line: number, reason: "the store line must come first") }
            try RecordSchema.validateName(line.name, what: "collection")
            guard collections[line.name] == nil else { throw .invalidImport(line: number, reason: "duplicate collection") }
            let schema = try RecordSchema(line.schema)
            collections[line.name] = schema
            return .collection(line.name, schema)
        case .record(let line):
            guard sawStore else { throw .invalidImport(line: number, reason: "the store line must come first") }
            return .record(try record(line, number))
        case .unknown(let type):
            throw .invalidImport(line: number, reason: "unknown line type '\(type)'")
        }
    }

    private func record(_ line: RecordStore.ExportRecordLine, _ number: Int) throws(RecordsError) -> StoredRecord {
        guard let id = UUID(uuidString: line.id) else { throw .invalidImport(line: number, reason: "invalid record id") }
        guard let schema = collections[line.collection] else {
            throw .invalidImport(line: number, reason: "collection '\(line.collection)' is not declared before its records")
        }
        var clear: [String: FieldValue] = [:]
        for (name, value) in line.clear {
            guard schema.fields[name] == .clear else { throw .invalidImport(line: number, reason: "'\(name)' is not a clear field") }
            switch (value.string, value.bytes) {
            case (let s?, nil): clear[name] = .string(s)
            case (nil, let b?): clear[name] = .bytes(b)
            default: throw .invalidImport(line: number, reason: "clear value of '\(name)' must be one of string or bytes")
            }
        }
        for (name, sealed) in line.sealed {
            guard schema.fields[name]?.isSealed == true else {
                throw .invalidImport(line: number, reason: "'\(name)' is not a sealed field")
            }
            let header: Envelope.Header
            do {
                header = try Envelope.header(of: sealed)
            } catch {
                throw .invalidImport(line: number, reason: "sealed value of '\(name)': \(error)")
            }
            guard (header.kdf == nil) == (line.keying == .storeKey) else {
                throw .invalidImport(line: number, reason: "sealed value of '\(name)' does not match the record's keying")
            }
        }
        for (name, token) in line.blindIndexes {
            guard schema.fields[name] == .sealedIndexed, line.sealed[name] != nil, token.count == BlindIndex.tokenByteCount,
                line.keying == .storeKey
            else { throw .invalidImport(line: number, reason: "invalid blind index for '\(name)'") }
        }
        switch line.keying {
        case .storeKey:
            // A record with clear fields alone written while its store had no key has no key id.
            guard line.keyId.map(keyIds.contains) ?? (line.sealed.isEmpty && line.mac == nil) else {
                throw .invalidImport(line: number, reason: "the record's store key is not in the export")
            }
            guard line.mac.map({ $0.count == RecordAuthentication.macByteCount }) ?? true else {
                throw .invalidImport(line: number, reason: "the record's MAC is not \(RecordAuthentication.macByteCount) bytes")
            }
        case .password:
            guard line.keyId == nil, line.blindIndexes.isEmpty else {
                throw .invalidImport(line: number, reason: "a password record has no store key id")
            }
            guard line.mac.map({ $0.isEmpty || $0.count == RecordAuthentication.writeIdByteCount }) ?? true else {
                throw .invalidImport(line: number, reason: "a password record carries no MAC, only its write id")
            }
            guard line.mac?.count != RecordAuthentication.writeIdByteCount || !line.sealed.isEmpty else {
                throw .invalidImport(line: number, reason: "a password record with a write id has no sealed value")
            }
        }
        let record = StoredRecord(
            id: id, collection: line.collection, keying: line.keying, keyId: line.keyId, clear: clear,
            sealed: line.sealed, blindIndexes: line.blindIndexes, mac: line.mac)
        // Every read would refuse it (`RecordStore.checkReadSize`).
        guard RecordStore.storedSize(of: record) <= RecordStore.Configuration.maximumRecordBytesCeiling else {
            throw .invalidImport(line: number, reason: "the record is larger than any record is written")
        }
        return record
    }
}
