import Foundation
import SFTestSupport
@_spi(Fuzzing) @testable import SecureRecords
import SecureRecordsPostgres
import SecureCore
import Testing

/// Issue 19: import streams its input. A file is read in chunks and its records inserted in
/// batches inside the one import transaction (bounded memory, linear time); a bad line anywhere
/// still leaves nothing imported; progress is reported after each batch.
@Suite struct ImportTests {
    /// A store of `count` records (clear, sealed and blind-indexed fields) and its export, written
    /// to `export.jsonl` in the scratch directory: (store, export path, line count).
    func exported(_ scratch: RecordsScratch, count: Int) throws -> (RecordStore, String, Int) {
        let store = try makeStore(scratch)
        let records: [[String: FieldValue]] = (0..<count).map { i in
            ["toWhom": .string("person \(i)"), "note": .string("gift \(i % 7)"), "ssn": .string("ssn-\(i % 13)"), "description": "secret"]
        }
        try store.add(contentsOf: records, to: "gifts")
        var lines: [String] = []
        try store.export { lines.append($0) }
        // The streamed export to a file writes the same lines, each ended by LF.
        let path = scratch.path("export.jsonl")
        #expect(try OutputDestination.write(to: path) { try store.export(to: $0) } == count)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == lines.joined(separator: "\n") + "\n")
        return (store, path, lines.count)
    }

    @Test(arguments: Backend.enabled)
    func aFileIsImportedInBatchesWithProgress(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let (_, path, _) = try exported(scratch, count: 2_500)
        var events: [RecordStore.ImportProgress] = []
        // Progress is reported on the calling thread (batches are inserted on another).
        let caller = pthread_self()
        var otherThreads = 0
        let copy = try RecordStore(storage: try scratch.storage("copy.db"), importingFile: path, configuration: testConfiguration) {
            events.append($0)
            if pthread_equal(pthread_self(), caller) == 0 { otherThreads += 1 }
        }
        #expect(otherThreads == 0)
        #expect(events.map(\.records) == [1_000, 2_000, 2_500])
        let fractions = events.compactMap(\.fractionRead)
        #expect(fractions.count == 3 && fractions == fractions.sorted() && fractions.last == 1 && fractions[0] > 0.3 && fractions[0] < 0.5)
        #expect(try copy.search().count == 2_500)
        try copy.unlock(with: appSealer)
        let found = try copy.search(in: "gifts", [.equals(field: "ssn", value: "ssn-5"), .fullText("gift")])
        #expect(found.count == 192)  // i ≡ 5 (mod 13) below 2,500: 5, 18, ..., 2,488
        #expect(try copy.open(try #require(found.first).id).fields["description"] == "secret")
    }

    @Test(arguments: Backend.enabled)
    func aBadLineAnywhereImportsNothing(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let (store, path, lineCount) = try exported(scratch, count: 1_500)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        // After the first batch has been inserted: a malformed line, then a repeated record.
        let lines = text.split(separator: "\n").map(String.init)
        let bad = try scratch.write("bad.jsonl", (lines + ["{\"type\":\"record\",\"id\":\"nope\"}"]).joined(separator: "\n"))
        #expect(throws: RecordsError.invalidImport(line: lineCount + 1, reason: "not a valid ExportRecordLine line")) {
            try RecordStore(storage: try scratch.storage("bad.db"), importingFile: bad, configuration: testConfiguration)
        }
        // The store was to be made by the import's transaction: the storage is left empty, and the
        // export then imports into it as into a new one.
        #expect(try scratch.storage("bad.db").loadMetadata() == nil, "a failed import left a store behind")
        let retried = try RecordStore(storage: try scratch.storage("bad.db"), importingFile: path, configuration: testConfiguration)
        #expect(retried.storeId == store.storeId)
        #expect(try retried.search().count == 1_500)
        let repeated = try scratch.write("repeated.jsonl", (lines + [lines[lines.count - 1]]).joined(separator: "\n"))
        #expect(throws: RecordsError.self) {
            try RecordStore(storage: try scratch.storage("repeated.db"), importingFile: repeated, configuration: testConfiguration)
        }
        #expect(try scratch.storage("repeated.db").loadMetadata() == nil, "a failed import left a store behind")
        // Into the store the export came from: every id exists, nothing changes.
        #expect(throws: RecordsError.self) { try store.importFile(atPath: path) }
        #expect(try store.search().count == 1_500)
        // CR LF line endings and no final line ending are read as lines.
        let crlf = try scratch.write("crlf.jsonl", lines.joined(separator: "\r\n"))
        #expect(try RecordStore(storage: try scratch.storage("crlf.db"), importingFile: crlf, configuration: testConfiguration).search().count == 1_500)
        // An input that cannot be read is a typed error.
        #expect {
            try store.importFile(atPath: scratch.path("missing.jsonl"))
        } throws: { error in
            if case RecordsError.unreadableImport = error { true } else { false }
        }
    }

    /// Each line is decoded on its own (lines are decoded in parallel) by the types of the format:
    /// a member of the wrong JSON type, a number that is not an integer written as one and in
    /// range, bytes that are not base64, or `null` where a value is required refuse the line;
    /// unknown members and `null` for an optional member do not.
    @Test func linesDecodeByTheTypesOfTheFormat() throws {
        let scratch = try RecordsScratch()
        let (_, path, _) = try exported(scratch, count: 3)
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        let recordIndex = try #require(lines.firstIndex { $0.contains("\"type\":\"record\"") })
        let record = try #require(try JSONSerialization.jsonObject(with: Data(lines[recordIndex].utf8)) as? [String: Any])
        func with(_ change: (inout [String: Any]) -> Void) throws -> [String] {
            var changed = record
            change(&changed)
            var result = lines
            result[recordIndex] = String(decoding: try JSONSerialization.data(withJSONObject: changed), as: UTF8.self)
            return result
        }
        let refused: [(String, (inout [String: Any]) -> Void)] = [
            ("keyId true", { $0["keyId"] = true }),
            ("keyId 1.5", { $0["keyId"] = 1.5 }),
            ("keyId -1", { $0["keyId"] = -1 }),
            ("keyId 2^32", { $0["keyId"] = 4_294_967_296 }),
            ("keyId a string", { $0["keyId"] = "1" }),
            ("id a number", { $0["id"] = 7 }),
            ("id null", { $0["id"] = NSNull() }),
            ("collection missing", { $0["collection"] = nil }),
            ("keying unknown", { $0["keying"] = "vault" }),
            ("mac not base64", { $0["mac"] = "!!" }),
            ("sealed an array", { $0["sealed"] = [] as [Any] }),
            ("a sealed value a number", { $0["sealed"] = ["description": 1] }),
            ("a clear value a string", { $0["clear"] = ["toWhom": "x"] }),
            ("a clear string a number", { $0["clear"] = ["toWhom": ["string": 1]] }),
        ]
        for (name, change) in refused {
            #expect(throws: RecordsError.invalidImport(line: recordIndex + 1, reason: "not a valid ExportRecordLine line"), "\(name)") {
                try RecordStore.validateExport(try with(change))
            }
        }
        // Written by hand: JSONSerialization writes 1.0 as 1.
        for spelling in ["1.0", "1e0"] {
            var written = lines
            written[recordIndex] = lines[recordIndex].replacingOccurrences(of: "\"keyId\":1,", with: "\"keyId\":\(spelling),")
            #expect(written != lines)
            #expect(throws: RecordsError.invalidImport(line: recordIndex + 1, reason: "not a valid ExportRecordLine line"), "\(spelling)") {
                try RecordStore.validateExport(written)
            }
        }
        #expect(try RecordStore.validateExport(try with { $0["unknown"] = [1, 2] }) == 3)
        #expect(throws: RecordsError.invalidImport(line: 1, reason: "not a valid LineType line")) {
            try RecordStore.validateExport(["[1]"] + lines)
        }
        #expect(throws: RecordsError.invalidImport(line: 1, reason: "not a valid LineType line")) {
            try RecordStore.validateExport(["{\"type\":1}"] + lines)
        }
    }

    /// Lines are decoded a group at a time on every core, then checked in order: the first bad line
    /// of a group is the one reported, whichever line its core reached first, and a record before
    /// its collection's line is refused even within one group.
    @Test func theFirstBadLineIsReportedWhateverTheOrderOfDecoding() throws {
        let scratch = try RecordsScratch()
        let (_, path, _) = try exported(scratch, count: 3_000)
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        lines[2_400] = "{\"type\":\"gift\"}"
        lines[1_100] = "{\"type\":\"record\"}"
        lines[2_900] = "not json"
        let bad = try scratch.write("bad.jsonl", lines.joined(separator: "\n"))
        #expect(throws: RecordsError.invalidImport(line: 1_101, reason: "not a valid ExportRecordLine line")) {
            try RecordStore(storage: try scratch.storage("bad.db"), importingFile: bad, configuration: testConfiguration)
        }
        #expect(try RecordStore(storage: try scratch.storage("bad.db"), configuration: testConfiguration).search().isEmpty)
        let original = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        let collection = try #require(original.firstIndex { $0.contains("\"type\":\"collection\"") })
        var late = original
        late.insert(late.remove(at: collection), at: 1_500)
        let reordered = try scratch.write("late.jsonl", late.joined(separator: "\n"))
        #expect(throws: RecordsError.invalidImport(line: collection + 1, reason: "collection 'gifts' is not declared before its records")) {
            try RecordStore(storage: try scratch.storage("late.db"), importingFile: reordered, configuration: testConfiguration)
        }
    }

    /// `sf records import` from standard input: copied to a private temporary file (read again if
    /// PostgreSQL repeats the transaction), removed afterwards whatever the outcome.
    @Test func standardInputIsImportedThroughATemporaryFile() throws {
        let scratch = try RecordsScratch()
        let (_, path, _) = try exported(scratch, count: 1_200)
        let temporary = scratch.path("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        let environment = ["SF_HOME": NSTemporaryDirectory() + "sf-records-home", "TMPDIR": temporary]
        let export = try Data(contentsOf: URL(fileURLWithPath: path))
        let result = try TestSupport.run(try sfBinary(), ["records", "import", "--store", scratch.path("stdin.db")], stdin: export, environment: environment)
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stderrText == "imported 1200 records\n")
        #expect(try RecordStore(path: scratch.path("stdin.db")).search().count == 1_200)
        var broken = export
        broken.append(Data("{\"type\":\"record\"}\n".utf8))
        let failed = try TestSupport.run(try sfBinary(), ["records", "import", "--store", scratch.path("broken.db")], stdin: broken, environment: environment)
        #expect(failed.status == 1 && failed.stderrText.contains("line 1203"))
        #expect(!FileManager.default.fileExists(atPath: scratch.path("broken.db")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty)
    }

    /// Export pages by insertion position, not by offset: a record deleted (or added) between two
    /// pages shifts nothing, and a store of any size pages in linear time (OFFSET made exporting
    /// 1,000,000 records quadratic).
    @Test(arguments: Backend.enabled)
    func exportPagesDoNotShiftWhenRecordsChange(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let ids = try store.add(contentsOf: (0..<5).map { ["toWhom": .string("p\($0)")] }, to: "gifts")
        let first = try store.storage.allRecords(after: 0, limit: 2)
        #expect(first.records.map(\.id) == Array(ids[0..<2]))
        try store.delete(ids[0])
        let second = try store.storage.allRecords(after: first.last, limit: 2)
        #expect(second.records.map(\.id) == Array(ids[2..<4]))
        let added = try store.add(["toWhom": "late"], to: "gifts")
        let third = try store.storage.allRecords(after: second.last, limit: 2)
        #expect(third.records.map(\.id) == [ids[4], added])
        let end = try store.storage.allRecords(after: third.last, limit: 2)
        #expect(end.records.isEmpty && end.last == third.last)
    }

    /// The store the export came from, created empty in `name` with no key (its store row
    /// alone), with the `gifts` collection: locked.
    func emptyStore(of source: RecordStore, _ scratch: RecordsScratch, name: String = "target.db") throws -> RecordStore {
        let storage = try scratch.storage(name)
        _ = try storage.initialize(StoreMetadata(storeId: source.storeId, currentKeyId: nil, keys: []))
        let store = try RecordStore(storage: storage, configuration: testConfiguration)
        try store.createCollection("gifts", schema: giftSchema)
        return store
    }

    /// An import does not give a store its first key while the store holds records added without
    /// one (a locked client may add clear fields alone while the store has no key): under the
    /// export's key they would fail as modified. Nothing is imported and the store keeps no key;
    /// without such records the same import goes through.
    @Test(arguments: Backend.enabled)
    func anImportGivesNoFirstKeyToAStoreHoldingRecordsWithoutOne(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let (source, path, _) = try exported(scratch, count: 10)
        let target = try emptyStore(of: source, scratch)
        let carol = try target.add(["toWhom": "Carol"], to: "gifts")
        #expect(throws: RecordsError.importBlockedByRecordsWithoutKey) { try target.importFile(atPath: path) }
        #expect(try target.storage.loadMetadata()?.currentKeyId == nil)
        #expect(try target.search().map(\.id) == [carol])
        try target.delete(carol)
        #expect(try target.importFile(atPath: path) == 10)
        try target.unlock(with: appSealer)
        #expect(try target.search(in: "gifts").count == 10)
    }

    /// The same when the record comes while the import runs (PostgreSQL, where a write does not wait
    /// for an import): the locked client's add, checked against the store's key before the import
    /// commits, goes through, and the import, which looks again holding the store's lock as its
    /// transaction ends, is refused. The store stays as it was, the added record valid.
    @Test(.requires(.postgres))
    func aRecordAddedWithoutKeyWhileAnImportRunsRefusesItsKey() throws {
        let scratch = try RecordsScratch(.postgres)
        let (source, path, _) = try exported(scratch, count: 2_500)
        let target = try emptyStore(of: source, scratch)
        let other = try scratch.reopen("target.db")
        var carol: UUID?
        #expect(throws: RecordsError.importBlockedByRecordsWithoutKey) {
            try target.importFile(atPath: path) { _ in
                if carol == nil { carol = try? other.add(["toWhom": "Carol"], to: "gifts") }
            }
        }
        let added = try #require(carol, "the add during the import was refused")
        #expect(try other.storage.loadMetadata()?.currentKeyId == nil)
        #expect(try other.search().map(\.id) == [added])
        try other.unlock(with: appSealer)  // the store's first key, adopting the record
        #expect(try other.record(added).clearFields["toWhom"] == "Carol")
    }

    /// And when the record's add is still in flight as the import ends (PostgreSQL): the import
    /// waits for the store's lock, which that add holds shared until it commits, then looks, and is
    /// refused. (Without the lock it would commit first, and the add after it.)
    @Test(.requires(.postgres), .hangBackstop)
    func anImportEndingWhileARecordWithoutKeyIsAddedWaitsForItAndIsRefused() throws {
        let scratch = try RecordsScratch(.postgres)
        let (source, path, _) = try exported(scratch, count: 100)
        let target = try emptyStore(of: source, scratch)
        let storage = try #require(try scratch.storage("target.db") as? PostgresRecordStorage)
        // A record without key, as a locked client adds it, inserted again by a checked insert held
        // open (its check passed, its commit waits).
        let carol = try target.add(["toWhom": "Carol"], to: "gifts")
        let row = try #require(try storage.record(carol))
        #expect(try storage.delete(carol))
        let checked = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), inserted = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do {
                _ = try storage.insert([row]) { (metadata) throws(RecordsError) -> Bool in
                    checked.signal()
                    _ = release.wait(timeout: .now() + 120)
                    return metadata?.currentKeyId == nil
                }
            } catch {
                Issue.record(error)
            }
            inserted.signal()
        }
        #expect(checked.wait(timeout: .now() + 60) == .success)
        let importing = BackgroundCall { () throws(RecordsError) in try target.importFile(atPath: path) }
        try waitForStoreLockWaiters(1, in: storage, orEnded: { importing.hasEnded })
        #expect(!importing.hasEnded, "the import ended while a write without key was in flight")
        release.signal()
        #expect(inserted.wait(timeout: .now() + 60) == .success)
        let imported = try #require(importing.result(waitingUntil: .now() + 60))
        #expect(throws: RecordsError.importBlockedByRecordsWithoutKey) { try imported.get() }
        #expect(try storage.loadMetadata()?.currentKeyId == nil)
        #expect(try target.search().map(\.id) == [carol])
    }

    /// An export of a store whose first unlock was cut short (its key made, its records without key
    /// not yet adopted) holds such records beside its key: restored into a new store it goes
    /// through on both backends (the check counts only records the import did not bring).
    @Test(arguments: Backend.enabled)
    func anExportHoldingRecordsWithoutKeyRestoresIntoANewStore(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let source = try makeStore(scratch, unlock: false)
        let carol = try source.add(["toWhom": "Carol"], to: "gifts")
        // The first half of a first unlock: the key, made current; the adoption never ran.
        let key = SecretBytes.random(count: Envelope.keyByteCount)
        #expect(try source.storage.addKey(try source.wrap(key, id: 1, sealer: appSealer), makeCurrent: true))
        // Unlocked, the store refuses the record: it cannot be told from one a store writer added.
        try source.unlock(with: appSealer)
        #expect(throws: RecordsError.recordModified(carol, reason: RecordStore.withoutKeyInAnAuthenticatingStore)) { try source.record(carol) }
        let path = scratch.path("cut-short.jsonl")
        #expect(try OutputDestination.write(to: path) { try source.export(to: $0) } == 1)
        let copy = try RecordStore(storage: try scratch.storage("copy.db"), importingFile: path, configuration: testConfiguration)
        #expect(try copy.storage.loadMetadata()?.currentKeyId == 1)
        #expect(try copy.search().map(\.id) == [carol])
    }
}
