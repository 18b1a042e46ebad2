// The PostgreSQL part of the SecureRecords benchmark: 100,000 vault-keyed records inserted through
// PostgresRecordStorage (one transaction, column arrays) next to `COPY` of the same rows unencrypted
// through psql; then blind-index equality search over 1,000,000 records.
import Foundation
import SecureCore
import SecureRecords
import SecureRecordsPostgres

/// Runs the PostgreSQL client tool `executable` with `arguments` (and `input` on standard input)
/// against the benchmark server; its exit status and standard output.
func postgresTool(_ executable: String, _ arguments: [String], password: String?, input: String = "") throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    if let password { environment["PGPASSWORD"] = password }
    process.environment = environment
    let stdin = Pipe(), stdout = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = FileHandle.nullDevice
    try process.run()
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    let output = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, output)
}

/// (Re)creates `table`: the records' rows unencrypted, in one table with the same kinds of indexes
/// (unique id, searched columns, GIN tsvector), for the peers (`COPY`, pgbench) to write into.
func createPlainTable(_ table: String, url: String, password: String?) throws {
    try psql(url, password: password, """
        DROP TABLE IF EXISTS \(table);
        CREATE TABLE \(table) (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id uuid NOT NULL UNIQUE, towhom text, note text, description text, ssn text,
            fts tsvector GENERATED ALWAYS AS (to_tsvector('simple', note || ' ' || towhom)) STORED);
        CREATE INDEX ON \(table) (ssn); CREATE INDEX ON \(table) (towhom); CREATE INDEX ON \(table) USING gin (fts);
        """)
}

/// The one value `sql` selects on the benchmark server, as text; fails loudly.
func psqlValue(_ url: String, password: String?, _ sql: String) throws -> String {
    let (status, output) = try postgresTool("/usr/bin/psql", [url, "-v", "ON_ERROR_STOP=1", "-q", "-At", "-c", sql], password: password)
    guard status == 0 else { fatalError("psql failed (\(status))") }
    return output.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Runs `psql` on the benchmark server with `sql` on standard input; fails loudly.
func psql(_ url: String, password: String?, _ sql: String) throws {
    let status = try postgresTool("/usr/bin/psql", [url, "-v", "ON_ERROR_STOP=1", "-q"], password: password, input: sql).status
    guard status == 0 else { fatalError("psql failed (\(status))") }
}

/// The tables of a store with `prefix` that a load writes.
let loadedTables = ["records", "clear_fields", "sealed_fields", "blind_indexes"]

/// Turns autovacuum off (or back to the server's setting) on `tables`: the tables the timed loads
/// write have it off until the comparison ends, so that no worker started by one load's rows runs
/// during the next.
func setAutovacuum(off: Bool, _ tables: [String], url: String, password: String?) throws {
    let option = off ? "SET (autovacuum_enabled = false)" : "RESET (autovacuum_enabled)"
    try psql(url, password: password, tables.map { "ALTER TABLE \($0) \(option);\n" }.joined())
}

/// Runs `load` from a quiet server and times it: a checkpoint just before (so that none starts
/// within the load and no load pays for the one before it); the seconds and the WAL it wrote (bytes).
func timedLoad(_ url: String, password: String?, _ load: () throws -> Void) throws -> (seconds: Double, wal: Double) {
    try psql(url, password: password, "CHECKPOINT;\n")
    let before = try psqlValue(url, password: password, "SELECT pg_current_wal_lsn()")
    let time = try seconds(load)
    let wal = try psqlValue(url, password: password, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '\(before)')")
    return (time, Double(wal) ?? 0)
}

/// One round of the load comparison, into tables of its own (`prefix`).
struct LoadRound {
    var ours = 0.0, ourCPU = 0.0, ourWAL = 0.0, copy = 0.0, copyWAL = 0.0, floor = 0.0
}

/// 100,000 records through SecureRecords into a new store with `prefix` (one transaction), then
/// the same rows unencrypted through psql `COPY`, then the server's floor for the schema; the store.
func loadRound(_ prefix: String, url: String, password: String?, configuration: PostgresRecordStorage.Configuration,
    sealer: any ItemSealer, directory: String, count: Int) throws -> (LoadRound, RecordStore) {
    var configuration = configuration
    configuration.tablePrefix = prefix
    let store = try RecordStore(storage: try PostgresRecordStorage(configuration: configuration))
    try store.createCollection("gifts", schema: schema)
    try store.unlock(with: sealer)
    try setAutovacuum(off: true, loadedTables.map { prefix + $0 }, url: url, password: password)
    var round = LoadRound()
    let batch = (0..<count).map(fields)
    var ids: [UUID] = []
    let cpuBefore = processCPUSeconds()
    (round.ours, round.ourWAL) = try timedLoad(url, password: password) { ids = try store.add(contentsOf: batch, to: "gifts") }
    round.ourCPU = processCPUSeconds() - cpuBefore

    // COPY of the same rows, unencrypted, into one table with the same indexes (id, searched
    // column, clear equality, full text), through psql, in one transaction.
    // The same rows: the ids SecureRecords gave the records, in the same order.
    let rows = (0..<count).map { i in [ids[i].uuidString.lowercased(), toWhom(i), note(i), description(i), ssn(i)].joined(separator: "\t") }
    let file = directory + "/copy.tsv"
    try (rows.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
    try createPlainTable("bench_copy", url: url, password: password)
    try setAutovacuum(off: true, ["bench_copy"], url: url, password: password)
    (round.copy, round.copyWAL) = try timedLoad(url, password: password) {
        try psql(url, password: password, "\\copy bench_copy (id, towhom, note, description, ssn) FROM '\(file)'\n")
    }
    // The server's own cost of this schema: the rows SecureRecords stored (sealed, four tables
    // with their indexes), dumped to files and loaded by psql `\copy` into empty copies of the
    // tables, in one transaction, in the binary format SecureRecords sends. No client can load
    // these rows faster than this.
    let columns = [
        "records": "id, collection, keying, key_id, fts, mac", "clear_fields": "record_id, name, kind, value",
        "sealed_fields": "record_id, name, sealed", "blind_indexes": "record_id, name, key_id, token",
    ]
    var dump = "", floorLoad = "BEGIN;\n"
    for table in loadedTables {
        let columns = columns[table]!
        dump += "DROP TABLE IF EXISTS floor_\(table); CREATE TABLE floor_\(table) (LIKE \(prefix)\(table) INCLUDING ALL) WITH (autovacuum_enabled = false);\n"
        dump += "\\copy (SELECT \(columns) FROM \(prefix)\(table)) TO '\(directory)/floor_\(table).bin' WITH (FORMAT binary)\n"
        floorLoad += "\\copy floor_\(table) (\(columns)) FROM '\(directory)/floor_\(table).bin' WITH (FORMAT binary)\n"
    }
    try psql(url, password: password, dump)
    round.floor = try timedLoad(url, password: password) { try psql(url, password: password, floorLoad + "COMMIT;\n") }.seconds
    return (round, store)
}

func postgresBenchmark(url: String, passwordFile: String?, sealer: any ItemSealer, directory: String, count: Int, big: Bool) throws {
    let password = try passwordFile.map { String(try String(contentsOfFile: $0, encoding: .utf8).prefix { $0 != "\n" }) }
    var configuration = try PostgresRecordStorage.Configuration(url: url, password: password.map { SecretBytes(Data($0.utf8)) })
    // Three rounds, each from a quiet server (`timedLoad`); the figures are their medians. The
    // first round's store is the one rotated below.
    var rounds: [LoadRound] = []
    var firstStore: RecordStore?
    for number in 1...3 {
        let (round, roundStore) = try loadRound(number == 1 ? "bench100k_" : "bench100k_\(number)_", url: url, password: password,
            configuration: configuration, sealer: sealer, directory: directory, count: count)
        rounds.append(round)
        if firstStore == nil { firstStore = roundStore }
        print(String(format: "PostgreSQL: round %d: SecureRecords %.2f s (client CPU %.2f s, %.0f MB of WAL), COPY %.2f s (%.0f MB of WAL), floor %.2f s; "
            + "SecureRecords / COPY = %.2fx", number, round.ours, round.ourCPU, round.ourWAL / 1e6, round.copy, round.copyWAL / 1e6, round.floor,
            round.ours / round.copy))
    }
    let store = firstStore!
    try setAutovacuum(off: false, loadedTables.map { "bench100k_" + $0 }, url: url, password: password)
    try psql(url, password: password, "ANALYZE " + loadedTables.map { "bench100k_" + $0 }.joined(separator: ", ") + ";\n")
    let ours = median(rounds.map(\.ours)), copy = median(rounds.map(\.copy)), floor = median(rounds.map(\.floor))
    let ratio = median(rounds.map { $0.ours / $0.copy })
    print(String(format: "PostgreSQL: insert %d vault-keyed records (2 sealed fields, 1 blind index, tsvector), one transaction: %.2f s (%.0f records/s; client CPU %.2f s, on the cores the server shares)",
        count, ours, Double(count) / ours, median(rounds.map(\.ourCPU))))
    print(String(format: "PostgreSQL: COPY of the same rows unencrypted through psql (indexes + tsvector), one transaction: %.2f s; ratio SecureRecords / COPY = %.2fx (median of the rounds' ratios)",
        copy, ratio))
    print(String(format: "PostgreSQL: COPY (binary) through psql of the rows SecureRecords stored (sealed; its four tables and indexes), one transaction: %.2f s "
        + "(the server's floor for this schema: %.2fx the unencrypted COPY); SecureRecords / floor = %.2fx", floor, floor / copy, ours / floor))
    // The WAL the rotation writes: its time varies with the checkpoints it meets (each page's first
    // change after one is logged whole), its WAL much less.
    let walBefore = try psqlValue(url, password: password, "SELECT pg_current_wal_lsn()")
    let rotateTime = try seconds { try store.rotateStoreKey(with: sealer) }
    let wal = try psqlValue(url, password: password, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '\(walBefore)')")
    print(String(format: "PostgreSQL: rotate the store key over %d records (batches of 256): %.2f s (%.0f records/s), %.0f MB of WAL",
        count, rotateTime, Double(count) / rotateTime, (Double(wal) ?? 0) / 1e6))
    try concurrentClientsBenchmark(url: url, password: password, configuration: configuration, sealer: sealer, directory: directory)
    guard big else { return }

    // Blind-index equality search over 1,000,000 records.
    let bigCount = 1_000_000
    configuration.tablePrefix = "bench1m_"
    let large = try RecordStore(storage: try PostgresRecordStorage(configuration: configuration))
    try large.createCollection("gifts", schema: schema)
    try large.unlock(with: sealer)
    let load = try seconds {
        for start in stride(from: 0, to: bigCount, by: 100_000) {
            try large.add(contentsOf: (start..<start + 100_000).map(fields), to: "gifts")
        }
    }
    try psql(url, password: password, "ANALYZE;")
    print(String(format: "PostgreSQL: loaded %d records in %.1f s (10 transactions of 100,000)", bigCount, load))
    var blind: [Double] = []
    for probe in 0..<200 {
        let i = (probe * 7_919) % bigCount
        var found = 0
        blind.append(try seconds { found = try large.search(in: "gifts", [.equals(field: "ssn", value: .string(ssn(i)))]).count })
        precondition(found == 1, "blind index search found \(found)")
    }
    print(String(format: "PostgreSQL: blind-index equality search over %d records: median %.3f ms, max %.3f ms (200 searches, 1 match each)",
        bigCount, median(blind) * 1000, (blind.max() ?? 0) * 1000))
    var fts: [Double] = []
    for probe in 0..<50 {
        let query = "\"\(words[probe % 10]) wrapped\" AND \(words[(probe / 10 + 3) % 10]) AND \"#\(probe * 1_999)\""
        fts.append(try seconds { _ = try large.search(in: "gifts", [.fullText(query)]).count })
    }
    print(String(format: "PostgreSQL: full-text search (tsquery, phrase AND word AND number) over %d records: median %.3f ms, max %.3f ms",
        bigCount, median(fts) * 1000, (fts.max() ?? 0) * 1000))
}
