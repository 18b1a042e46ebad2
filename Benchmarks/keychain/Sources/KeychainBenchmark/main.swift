// SecureKeychain benchmark: coalesced writes, random reads, open time and peak memory of a
// 100,000-item keychain, against raw SQLite inserting the same rows in one transaction.
//
//   KeychainBenchmark run DIR        all phases (DIR is scratch space)
//   KeychainBenchmark open-read PATH open PATH and read it (run as a child for peak memory)
import CSQLiteBenchmark
import Foundation
import SecureKeychain

let itemCount = 100_000

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func service(_ index: Int) -> String { "service-\(index % 100)" }
func account(_ index: Int) -> String { "account-\(index)@example.com" }
func password(_ index: Int) -> String { "password-\(index)-\(String(repeating: "x", count: 16))" }

func peakMemoryMiB() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)  // glibc imports RUSAGE_SELF as an enum
    return Double(usage.ru_maxrss) / 1024  // kilobytes on Linux
}

/// Raw SQLite: the keychain's table, WAL, synchronous FULL, one prepared INSERT per row, one transaction.
func rawSQLiteInsert(path: String) -> Double {
    var db: OpaquePointer?
    sqlite3_open(path, &db)
    sqlite3_exec(db, """
        PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
        CREATE TABLE items (class INTEGER NOT NULL, access_group TEXT NOT NULL, service TEXT NOT NULL,
            account TEXT NOT NULL, label TEXT, comment TEXT, generic BLOB, created REAL NOT NULL, modified REAL NOT NULL,
            sealed INTEGER NOT NULL, value BLOB NOT NULL, PRIMARY KEY (class, access_group, service, account)) WITHOUT ROWID;
        """, nil, nil, nil)
    let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    let rows = (0..<itemCount).map { (service($0), account($0), Data(password($0).utf8)) }
    let elapsed = seconds {
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "INSERT INTO items VALUES (1, '', ?1, ?2, NULL, NULL, NULL, ?3, ?3, 0, ?4)", -1, &statement, nil)
        sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
        let now = Date().timeIntervalSince1970
        for (service, account, value) in rows {
            sqlite3_bind_text(statement, 1, service, -1, transient)
            sqlite3_bind_text(statement, 2, account, -1, transient)
            sqlite3_bind_double(statement, 3, now)
            _ = value.withUnsafeBytes { sqlite3_bind_blob(statement, 4, $0.baseAddress, Int32($0.count), transient) }
            guard sqlite3_step(statement) == SQLITE_DONE else { fatalError(String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(statement)
        }
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
        sqlite3_finalize(statement)
    }
    sqlite3_close(db)
    return elapsed
}

func openAndRead(path: String) throws -> (open: Double, openedMemory: Double, readsPerSecond: Double) {
    var keychain: Keychain?
    let openTime = try seconds { keychain = try Keychain(path: path) }
    guard let keychain else { fatalError() }
    let openedMemory = peakMemoryMiB()
    var generator = SystemRandomNumberGenerator()
    let keys = (0..<itemCount).map { _ in Int.random(in: 0..<itemCount, using: &generator) }.map { (service($0), account($0), $0) }
    var mismatches = 0
    let readTime = try seconds {
        for (service, account, _) in keys where try keychain.passwordData(service: service, account: account).isEmpty {
            mismatches += 1
        }
    }
    for (service, account, index) in keys.prefix(1_000) where try keychain.password(service: service, account: account) != password(index) {
        mismatches += 1
    }
    guard mismatches == 0 else { fatalError("\(mismatches) wrong values read") }
    return (openTime, openedMemory, Double(itemCount) / readTime)
}

let arguments = CommandLine.arguments
switch (arguments.count, arguments.dropFirst().first) {
case (3, "open-read"):
    let (open, openedMemory, reads) = try openAndRead(path: arguments[2])
    print(String(format: "open %.1f ms; peak memory once open %.1f MiB (%.1f MiB after the reads, including the "
                 + "benchmark's table of 100,000 lookup keys); %.0f random reads/s", open * 1000, openedMemory, peakMemoryMiB(), reads))
case (3, "run"):
    // Three rounds of each (the machine is shared); the median is reported, every round is shown.
    let directory = arguments[2]
    let keychainPath = directory + "/bench-keychain.db"
    let rawPath = directory + "/bench-raw.db"
    // Inputs are built before timing, as for the raw-SQLite baseline.
    let rows = (0..<itemCount).map { (service($0), account($0), password($0)) }
    var writes: [(total: Double, calls: Double)] = [], raws: [Double] = []
    for _ in 0..<3 {
        for path in [keychainPath, rawPath] {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let keychain = try Keychain(path: keychainPath)
        var callTime = 0.0
        let writeTime = try seconds {
            callTime = try seconds {
                for (service, account, password) in rows { try keychain.setPassword(password, service: service, account: account) }
            }
            try keychain.synchronizeBlocking()
        }
        try keychain.close()
        writes.append((writeTime, callTime))
        raws.append(rawSQLiteInsert(path: rawPath))
    }
    let write = writes.sorted { $0.total < $1.total }[1], raw = raws.sorted()[1]
    let rounds = writes.map { String(format: "%.3f", $0.total) }.joined(separator: ", ")
    print(String(format: "keychain: %d coalesced setPassword + synchronize: %.3f s (%.2f µs/op; target <= 1.0 s; "
                 + "calls %.3f s, then synchronize %.3f s; rounds: %@)",
                 itemCount, write.total, write.total / Double(itemCount) * 1e6, write.calls, write.total - write.calls, rounds))
    print(String(format: "raw SQLite: the same %d rows in one transaction: %.3f s (keychain / raw = %.2fx; target <= 2x; rounds: %@)",
                 itemCount, raw, write.total / raw, raws.map { String(format: "%.3f", $0) }.joined(separator: ", ")))
default:
    FileHandle.standardError.write(Data("usage: KeychainBenchmark run DIR | open-read PATH\n".utf8))
    exit(2)
}
