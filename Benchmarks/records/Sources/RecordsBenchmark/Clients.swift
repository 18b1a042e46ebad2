// Concurrent clients on one PostgreSQL store: records/s at 1, 4 and 16 threads sharing one
// `PostgresRecordStorage` (its connection pool), then as many tasks awaiting `RecordStore.async`,
// next to pgbench inserting one comparable row per transaction with as many clients on the same
// server (the server's ceiling for such writes).
import Foundation
import SecureCore
import SecureRecords
import SecureRecordsPostgres

/// A total the client threads add to. Unchecked Sendable: `lock` guards `value`.
private final class Total: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func add(_ count: Int) { lock.withLock { value += count } }
    var sum: Int { lock.withLock { value } }
}

/// Runs `body` on `clients` threads until `seconds` have passed; returns how many calls completed.
private func throughput(clients: Int, seconds: Double, _ body: @escaping @Sendable (Int, Int) throws -> Void) -> Int {
    let end = Date(timeIntervalSinceNow: seconds)
    let done = Total()
    let group = DispatchGroup()
    for client in 0..<clients {
        group.enter()
        Thread {
            var count = 0
            while Date() < end {
                do { try body(client, count) } catch { fatalError("client \(client): \(error)") }
                count += 1
            }
            done.add(count)
            group.leave()
        }.start()
    }
    group.wait()
    return done.sum
}

/// Runs `body` in `clients` tasks until `seconds` have passed; returns how many calls completed.
/// Waits on the calling thread (the benchmark's main thread, outside the cooperative pool).
private func asyncThroughput(clients: Int, seconds: Double, _ body: @escaping @Sendable (Int, Int) async throws -> Void) -> Int {
    let end = Date(timeIntervalSinceNow: seconds)
    let done = Total()
    let finished = DispatchSemaphore(value: 0)
    Task {
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<clients {
                group.addTask {
                    var count = 0
                    while Date() < end {
                        do { try await body(client, count) } catch { fatalError("client \(client): \(error)") }
                        count += 1
                    }
                    done.add(count)
                }
            }
        }
        finished.signal()
    }
    finished.wait()
    return done.sum
}

/// pgbench's rate (transactions/s) for `script` with `clients` clients for `seconds`.
private func pgbench(_ url: String, password: String?, script: String, clients: Int, seconds: Int) throws -> Double {
    let (status, text) = try postgresTool(
        "/usr/lib/postgresql/15/bin/pgbench",
        ["-n", "-f", script, "-c", String(clients), "-j", String(min(clients, 2)), "-T", String(seconds), url], password: password)
    guard status == 0,
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
        let tps = Double(line.dropFirst(6).prefix { $0 != " " })
    else { fatalError("pgbench failed (\(status)): \(text)") }
    return tps
}

func concurrentClientsBenchmark(
    url: String, password: String?, configuration base: PostgresRecordStorage.Configuration, sealer: any ItemSealer, directory: String
) throws {
    let seconds = 10.0
    try createPlainTable("bench_pgbench", url: url, password: password)
    let script = directory + "/pgbench-insert.sql"
    try """
        INSERT INTO bench_pgbench (id, towhom, note, description, ssn) VALUES (gen_random_uuid(), 'Alice ' || :client_id, \
        'a note about the present ' || :client_id, 'a sealed description of the present', 'ssn-' || :client_id || '-' || random());

        """.write(toFile: script, atomically: true, encoding: .utf8)
    for clients in [1, 4, 16] {
        var configuration = base
        configuration.tablePrefix = "benchclients\(clients)_"
        configuration.maximumConnections = 16
        let store = try RecordStore(storage: try PostgresRecordStorage(configuration: configuration))
        try store.createCollection("gifts", schema: schema)
        try store.unlock(with: sealer)
        let added = throughput(clients: clients, seconds: seconds) { client, i in
            try store.add(fields(client * 1_000_000 + i), to: "gifts")
        }
        let awaited = asyncThroughput(clients: clients, seconds: seconds) { client, i in
            _ = try await store.async.add(fields(client * 1_000_000 + i), to: "gifts")
        }
        let ceiling = try pgbench(url, password: password, script: script, clients: clients, seconds: Int(seconds))
        print(String(format: "PostgreSQL: %2d concurrent clients on one storage (pool of 16), one record per add: %.0f records/s from threads, "
            + "%.0f records/s from tasks (async); pgbench, one comparable row per transaction: %.0f rows/s (%.0f%%, %.0f%%)",
            clients, Double(added) / seconds, Double(awaited) / seconds, ceiling, 100 * Double(added) / seconds / ceiling,
            100 * Double(awaited) / seconds / ceiling))
    }
}
