// SecureRecords benchmark: insert 100,000 vault-keyed records (one clear field, two sealed fields,
// one of them blind-indexed) next to raw SQLite inserting the same rows unencrypted; blind-index
// equality search and FTS5 search over 1,000,000 records; one per-record-password add and open.
//
//   RecordsBenchmark DIR     (DIR is scratch space)
import CSQLiteBenchmark
import Foundation
import SecureCore
import SecureKeychain
@_spi(Fuzzing) import SecureRecords
import SecureVault

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// The CPU time this process has used so far (all its threads), in seconds.
func processCPUSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

let words = ["bicycle", "kite", "book", "scarf", "train", "puzzle", "drum", "lamp", "robot", "paint"]
func toWhom(_ i: Int) -> String { "person-\(i % 5_000)" }
func note(_ i: Int) -> String { "a \(words[i % words.count]) wrapped in \(words[(i / 10) % words.count]) paper #\(i)" }
func description(_ i: Int) -> String { "gift description number \(i), kept secret" }
func ssn(_ i: Int) -> String { String(format: "%03d-%02d-%04d", i % 1000, (i / 1000) % 100, i % 10_000) + "-\(i)" }

func fields(_ i: Int) -> [String: FieldValue] {
    ["toWhom": .string(toWhom(i)), "note": .string(note(i)), "description": .string(description(i)), "ssn": .string(ssn(i))]
}

/// Raw SQLite: one table with the same values in clear, an index on the searched column and an
/// FTS5 table over the clear text, WAL, synchronous FULL, one transaction.
func rawSQLiteInsert(path: String, count: Int) -> Double {
    var db: OpaquePointer?
    sqlite3_open(path, &db)
    sqlite3_exec(db, """
        PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA cache_size = -32768;
        CREATE TABLE gifts (seq INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, toWhom TEXT, note TEXT, description TEXT, ssn TEXT);
        CREATE INDEX gifts_ssn ON gifts (ssn); CREATE INDEX gifts_toWhom ON gifts (toWhom);
        CREATE VIRTUAL TABLE gifts_fts USING fts5 (body);
        """, nil, nil, nil)
    let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    let rows = (0..<count).map { i in (withUnsafeBytes(of: UUID().uuid) { Data($0) }, toWhom(i), note(i), description(i), ssn(i)) }
    return seconds {
        var insert: OpaquePointer?, fts: OpaquePointer?
        sqlite3_prepare_v2(db, "INSERT INTO gifts (id, toWhom, note, description, ssn) VALUES (?1, ?2, ?3, ?4, ?5)", -1, &insert, nil)
        sqlite3_prepare_v2(db, "INSERT INTO gifts_fts (rowid, body) VALUES (?1, ?2)", -1, &fts, nil)
        sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
        for (id, to, note, description, ssn) in rows {
            _ = id.withUnsafeBytes { sqlite3_bind_blob(insert, 1, $0.baseAddress, 16, transient) }
            sqlite3_bind_text(insert, 2, to, -1, transient)
            sqlite3_bind_text(insert, 3, note, -1, transient)
            sqlite3_bind_text(insert, 4, description, -1, transient)
            sqlite3_bind_text(insert, 5, ssn, -1, transient)
            guard sqlite3_step(insert) == SQLITE_DONE else { fatalError(String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(insert)
            sqlite3_bind_int64(fts, 1, sqlite3_last_insert_rowid(db))
            sqlite3_bind_text(fts, 2, note + "\n" + to, -1, transient)
            guard sqlite3_step(fts) == SQLITE_DONE else { fatalError(String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(fts)
        }
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
        sqlite3_finalize(insert)
        sqlite3_finalize(fts)
        sqlite3_close(db)
    }
}

let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : NSTemporaryDirectory()
let schema = try RecordSchema(["toWhom": .clear, "note": .clear, "description": .sealed, "ssn": .sealedIndexed])

// The vault (cheap scrypt: its unlock cost is not what is measured here).
let keychain = try Keychain(path: directory + "/keychain.db")
let vault = Vault(keychain: keychain, configuration: .init(kdf: .scrypt(logN: 10, r: 8, p: 1)))
try vault.setUp(passcode: SecretBytes(Data("bench passcode".utf8)), questions: ["q?"], answers: ["a"])

// 1. 100,000 inserts.
let insertCount = 100_000
let environment = ProcessInfo.processInfo.environment
if let url = environment["RECORDS_BENCH_POSTGRES_URL"], environment["RECORDS_BENCH_POSTGRES_ONLY"] != nil {
    try postgresBenchmark(url: url, passwordFile: environment["RECORDS_BENCH_POSTGRES_PASSWORD_FILE"], sealer: vault, directory: directory,
        count: insertCount, big: environment["RECORDS_BENCH_INSERT_ONLY"] == nil)
    try keychain.close()
    exit(0)
}
let raw = rawSQLiteInsert(path: directory + "/raw.db", count: insertCount)
let store = try RecordStore(path: directory + "/records-100k.db")
try store.createCollection("gifts", schema: schema)
try store.unlock(with: vault)
let batch = (0..<insertCount).map(fields)
let ours = try seconds { try store.add(contentsOf: batch, to: "gifts") }
print(String(format: "insert %d vault-keyed records (2 sealed fields, 1 blind index, FTS5 over clear fields), one transaction: %.2f s (%.0f records/s); target <= 2 s",
    insertCount, ours, Double(insertCount) / ours))
print(String(format: "raw SQLite, same rows unencrypted (index + FTS5), one transaction: %.2f s; ratio SecureRecords / raw = %.1fx", raw, ours / raw))

/// A backend that keeps nothing: isolates the cost of sealing and indexing from SQLite's.
final class DiscardingStorage: RecordStorage, @unchecked Sendable {
    let base: SQLiteRecordStorage
    init(_ base: SQLiteRecordStorage) { self.base = base }
    func loadMetadata() throws(RecordsError) -> StoreMetadata? { try base.loadMetadata() }
    func initialize(_ metadata: StoreMetadata) throws(RecordsError) -> StoreMetadata { try base.initialize(metadata) }
    func addKey(_ key: WrappedStoreKey, makeCurrent: Bool) throws(RecordsError) -> Bool { try base.addKey(key, makeCurrent: makeCurrent) }
    func rewrapKeys(_ keys: [WrappedStoreKey]) throws(RecordsError) { try base.rewrapKeys(keys) }
    func collections() throws(RecordsError) -> [String: RecordSchema] { try base.collections() }
    func createCollection(_ collection: String, schema: RecordSchema) throws(RecordsError) -> RecordSchema {
        try base.createCollection(collection, schema: schema)
    }
    func insert(_ records: [StoredRecord]) throws(RecordsError) {}
    func replace(_ records: [StoredRecord]) throws(RecordsError) {}
    func replace(_ records: [StoredRecord], ifUnchangedFrom expected: [StoredRecord]) throws(RecordsError) -> Set<UUID> { [] }
    func delete(_ id: UUID) throws(RecordsError) -> Bool { false }
    func record(_ id: UUID) throws(RecordsError) -> StoredRecord? { nil }
    func search(_ query: StorageQuery) throws(RecordsError) -> [StoredRecord] { [] }
    func records(withKeyIdOtherThan keyId: UInt32, after position: Int64, limit: Int) throws(RecordsError) -> (records: [StoredRecord], last: Int64) {
        ([], position)
    }
    func importAll(_ body: (any RecordImportWriter) throws(RecordsError) -> Void) throws(RecordsError) {}
    func allRecords(after position: Int64, limit: Int) throws(RecordsError) -> (records: [StoredRecord], last: Int64) { ([], position) }
}
let sealingOnly = try RecordStore(storage: DiscardingStorage(try SQLiteRecordStorage(path: directory + "/records-100k.db")))
try sealingOnly.unlock(with: vault)
let sealTime = try seconds { try sealingOnly.add(contentsOf: batch, to: "gifts") }
print(String(format: "  sealing, blind indexes and ids alone (storage discarded; on every core, a fork-join per group of batches): %.2f s", sealTime))

/// The process's peak resident memory since `resetPeakResident`, in MiB (Linux: VmHWM).
func peakResidentMiB() -> Double {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return (Double(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
}

/// Resets the peak resident memory to the current (Linux: 5 written to /proc/self/clear_refs).
func resetPeakResident() { try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8) }

// Export to a file, then import that file into a new file (what `sf records import` does: read in
// chunks, inserted in batches in one transaction); the parse alone of half and of all the lines,
// which must take time linear in the input (it was quadratic: 16,000 records in 8.9 s, 32,000 in 71 s).
var exportLines: [String] = []
let exportPath = directory + "/export-100k.jsonl"
let exportTime = try seconds { _ = try OutputDestination.write(to: exportPath) { try store.export(to: $0) } }
exportLines = try String(contentsOfFile: exportPath, encoding: .utf8).split(separator: "\n").map(String.init)
resetPeakResident()
let residentBefore100k = peakResidentMiB()
let importTime = try seconds {
    _ = try RecordStore(storage: try SQLiteRecordStorage(path: directory + "/imported-100k.db"), importingFile: exportPath)
}
let peak100k = peakResidentMiB()
let half = Array(exportLines.prefix(exportLines.count / 2))
let parseHalf = try seconds { _ = try RecordStore.validateExport(half) }
let parseAll = try seconds { _ = try RecordStore.validateExport(exportLines) }
exportLines = []
print(String(format: "export %d records to a file: %.2f s; import the file into a new store: %.2f s (target <= 3 s), peak resident %.0f MiB from %.0f MiB; parse alone: %.2f s for half, %.2f s for all",
    insertCount, exportTime, importTime, peak100k, residentBefore100k, parseHalf, parseAll))

// Key rotation over the 100,000 records: each record opened, re-sealed, re-indexed and
// re-authenticated, a batch of 256 per transaction, the batches paged by insertion position (each
// batch used to sort every record left to rotate: quadratic in the store's size).
let rotateTime = try seconds { try store.rotateStoreKey(with: vault) }
print(String(format: "rotate the store key over %d records (batches of 256): %.2f s (%.0f records/s)",
    insertCount, rotateTime, Double(insertCount) / rotateTime))

// The same insert on PostgreSQL next to COPY through psql (run.sh starts a throw-away cluster).
if let url = environment["RECORDS_BENCH_POSTGRES_URL"] {
    try postgresBenchmark(url: url, passwordFile: environment["RECORDS_BENCH_POSTGRES_PASSWORD_FILE"], sealer: vault, directory: directory,
        count: insertCount, big: environment["RECORDS_BENCH_INSERT_ONLY"] == nil)
}

if environment["RECORDS_BENCH_INSERT_ONLY"] != nil { exit(0) }

// 2. Searches over 1,000,000 records.
let bigCount = 1_000_000
let big = try RecordStore(path: directory + "/records-1m.db")
try big.createCollection("gifts", schema: schema)
try big.unlock(with: vault)
let load = try seconds {
    for start in stride(from: 0, to: bigCount, by: 100_000) {
        try big.add(contentsOf: (start..<start + 100_000).map(fields), to: "gifts")
    }
}
print(String(format: "loaded %d records in %.1f s (10 transactions of 100,000)", bigCount, load))
var blind: [Double] = []
for probe in 0..<200 {
    let i = (probe * 7_919) % bigCount
    var found = 0
    blind.append(try seconds { found = try big.search(in: "gifts", [.equals(field: "ssn", value: .string(ssn(i)))]).count })
    precondition(found == 1, "blind index search found \(found)")
}
print(String(format: "blind-index equality search over %d records: median %.3f ms, max %.3f ms (200 searches, 1 match each); target <= 5 ms",
    bigCount, median(blind) * 1000, (blind.max() ?? 0) * 1000))
var fts: [Double] = []
var ftsMatches = 0
for probe in 0..<50 {
    let query = "\"\(words[probe % 10]) wrapped\" AND \(words[(probe / 10 + 3) % 10]) AND \"#\(probe * 1_999)\""
    fts.append(try seconds { ftsMatches += try big.search(in: "gifts", [.fullText(query)]).count })
}
print(String(format: "FTS5 search over %d records (phrase AND word AND number, few matches): median %.3f ms, max %.3f ms; target <= 20 ms",
    bigCount, median(fts) * 1000, (fts.max() ?? 0) * 1000))
var broad: [Double] = []
for probe in 0..<20 {
    broad.append(try seconds { _ = try big.search(in: "gifts", [.fullText("\(words[probe % 10]) AND person"), .equals(field: "toWhom", value: .string(toWhom(probe)))]) })
}
print(String(format: "FTS5 word AND clear equality (toWhom, ~200 records each) over %d records: median %.3f ms", bigCount, median(broad) * 1000))

// The 1,000,000 records exported to a file and imported into a new store, in constant memory: the
// peak resident memory of the import is the 100,000-record import's, not ten times it.
let bigExportPath = directory + "/export-1m.jsonl"
let bigExportTime = try seconds { _ = try OutputDestination.write(to: bigExportPath) { try big.export(to: $0) } }
let bigExportSize = (try FileManager.default.attributesOfItem(atPath: bigExportPath)[.size] as? Int) ?? 0
resetPeakResident()
let residentBefore1m = peakResidentMiB()
let bigImportTime = try seconds {
    _ = try RecordStore(storage: try SQLiteRecordStorage(path: directory + "/imported-1m.db"), importingFile: bigExportPath)
}
print(String(format: "export %d records to a file (%.0f MiB): %.1f s; import it into a new store: %.1f s, peak resident %.0f MiB from %.0f MiB",
    bigCount, Double(bigExportSize) / 1_048_576, bigExportTime, bigImportTime, peakResidentMiB(), residentBefore1m))

// 3. Per-record passwords: one scrypt (logN 17, r 8, p 1) per sealed value, by design.
let passwordStore = try RecordStore(path: directory + "/records-pw.db")
try passwordStore.createCollection("gifts", schema: try RecordSchema(["toWhom": .clear, "description": .sealed, "card": .sealed]))
var pwId = UUID()
let password = SecretBytes(Data("for Alice".utf8))
let pwAdd = try seconds {
    pwId = try passwordStore.add(["toWhom": "Alice", "description": "a red bicycle", "card": "Merry Xmas"], to: "gifts", sealing: .password(password))
}
let pwOpen = try seconds { _ = try passwordStore.open(pwId, password: password) }
print(String(format: "password record (2 sealed fields = 2 scrypt logN 17 runs): add %.2f s, open %.2f s", pwAdd, pwOpen))
try keychain.close()
