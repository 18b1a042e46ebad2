import Foundation
import SFTestSupport
@testable import SecureRecords
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
        let copy = try RecordStore(storage: try scratch.storage("copy.db"), importingFile: path, configuration: testConfiguration) {
            events.append($0)
        }
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
        #expect(try RecordStore(storage: try scratch.storage("bad.db"), configuration: testConfiguration).search().isEmpty)
        let repeated = try scratch.write("repeated.jsonl", (lines + [lines[lines.count - 1]]).joined(separator: "\n"))
        #expect(throws: RecordsError.self) {
            try RecordStore(storage: try scratch.storage("repeated.db"), importingFile: repeated, configuration: testConfiguration)
        }
        #expect(try RecordStore(storage: try scratch.storage("repeated.db"), configuration: testConfiguration).search().isEmpty)
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
}
