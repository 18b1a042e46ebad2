import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureCore
import Testing

/// Tests that run `sf records` as child processes: SIGKILL during key rotation, and two processes
/// writing one store at once.
@Suite(.serialized) struct ProcessTests {
    /// Inserts `count` store-keyed records in one transaction.
    func populate(_ store: RecordStore, count: Int) throws {
        let schema = try store.schema(of: "gifts")
        var rows: [StoredRecord] = []
        for i in 0..<count {
            rows.append(try store.seal(
                id: UUID(), collection: "gifts", schema: schema,
                fields: ["toWhom": .string("p\(i)"), "description": .string("gift \(i)"), "ssn": .string("s\(i % 10)")], sealing: .storeKey))
        }
        try store.storage.insert(rows)
    }

    @Test func sigkillDuringRotationLeavesEveryRecordOpenableAndRerunFinishes() throws {
        let scratch = try RecordsScratch()
        let store = try makeStore(scratch)
        try populate(store, count: 1_000)
        let keyFile = try appKey.withUnsafeBytes { try scratch.write("app.key", Data($0)) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: try sfBinary())
        process.arguments = ["records", "rotate-key", "--store", scratch.path("store.db"), "--key-file", keyFile, "--batch-size", "2"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("resealed 4\n") {
            let chunk = errors.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)

        let reopened = try RecordStore(path: scratch.path("store.db"), configuration: testConfiguration)
        let opening = try KeyChangeTests.keysOpeningEachRecord(reopened)
        #expect(opening.count == 1_000)
        #expect(opening.values.allSatisfy { $0.count == 1 }, "every record opens with exactly one key")
        let onNew = opening.values.filter { $0 == [2] }.count
        #expect(onNew >= 4 && onNew < 1_000, "killed mid-way: \(onNew) records on the new key")
        try reopened.unlock(with: appSealer)
        #expect(try reopened.search(in: "gifts", [.equals(field: "ssn", value: "s3")]).count == 100)

        let rerun = try sf(["records", "rotate-key", "--store", scratch.path("store.db"), "--key-file", keyFile, "--batch-size", "100"])
        #expect(rerun.status == 0, "\(rerun.stderrText)")
        #expect(rerun.stdoutText.contains("store key 2: \(1_000 - onNew) records re-sealed (finished an interrupted rotation)"))
        #expect(try KeyChangeTests.keysOpeningEachRecord(reopened).values.allSatisfy { $0 == [2] })
        try reopened.unlock(with: appSealer)
        #expect(try reopened.search(in: "gifts", [.equals(field: "ssn", value: "s3")]).count == 100)
    }

    /// Two processes that find no store file both create, initialise and write it; neither may
    /// fail with "database is locked" (a query left on a row used to pin a stale snapshot, so the
    /// loser's next write got BUSY at once). The race is short, so it is run many times.
    @Test func twoProcessesCreatingOneStoreAtOnceBothSucceed() throws {
        let scratch = try RecordsScratch()
        let keyFile = try appKey.withUnsafeBytes { try scratch.write("app.key", Data($0)) }
        for round in 0..<25 {
            let path = scratch.path("new-\(round).db")
            let results = Locked<[ProcessResult]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { writer in
                let result = try? sf([
                    "records", "add", "--store", path, "--collection", "shared", "--key-file", keyFile,
                    "--field", "writer=w\(writer)", "--indexed", "code=c\(writer)", "--sealed", "note=n\(writer)",
                ])
                if let result { results.withLock { $0.append(result) } }
            }
            let finished = results.withLock { $0 }
            #expect(finished.count == 2)
            for result in finished { #expect(result.status == 0, "round \(round): \(result.stderrText)") }
            let store = try RecordStore(path: path)
            #expect(try store.search(in: "shared").count == 2, "round \(round)")
        }
    }

    @Test func twoProcessesWritingOneStoreLoseNothing() throws {
        let scratch = try RecordsScratch()
        let path = scratch.path("shared.db")
        let keyFile = try appKey.withUnsafeBytes { try scratch.write("app.key", Data($0)) }
        // Neither process finds a store key or collection: both race to create them.
        let group = DispatchGroup()
        let results = Locked<[ProcessResult]>([])
        for writer in 0..<2 {
            DispatchQueue.global().async(group: group) {
                let result = try? sf([
                    "records", "add", "--store", path, "--collection", "shared", "--key-file", keyFile,
                    "--field", "writer=w\(writer)", "--indexed", "code=c\(writer)", "--sealed", "note=n\(writer)", "--repeat-count", "150",
                ])
                if let result { results.withLock { $0.append(result) } }
            }
        }
        group.wait()
        let finished = results.withLock { $0 }
        #expect(finished.count == 2)
        for result in finished { #expect(result.status == 0, "\(result.stderrText)") }
        let printed = finished.flatMap { $0.stdoutText.split(separator: "\n").map(String.init) }
        #expect(printed.count == 300)
        #expect(Set(printed).count == 300)

        let store = try RecordStore(path: path)
        try store.unlock(with: appSealer)
        let all = try store.search(in: "shared")
        #expect(all.count == 300)
        #expect(Set(all.map { $0.id.uuidString.lowercased() }) == Set(printed))
        #expect(try store.storage.loadMetadata()?.keys.count == 1)
        for writer in 0..<2 {
            let mine = try store.search(in: "shared", [.equals(field: "code", value: .string("c\(writer)"))])
            #expect(mine.count == 150)
            #expect(mine.allSatisfy { $0.clearFields["writer"] == .string("w\(writer)") })
            #expect(try store.open(try #require(mine.last).id).fields["note"] == .string("n\(writer)"))
        }
    }
}
