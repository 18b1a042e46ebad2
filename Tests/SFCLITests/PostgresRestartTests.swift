import Foundation
import SFTestSupport
import SecureCore
import SecureRecords
import SecureRecordsPostgres
import Testing

/// Issue 19: a PostgreSQL server that restarts or stops answering never hangs `sf records add`.
/// Each run adds 4,000 records while the server restarts (`pg_ctl restart -m fast`, `-m immediate`)
/// or is stopped (SIGSTOP of every server process): a restart under the deadline lets the run
/// complete; a stopped server ends the run with a deadline error while it is still stopped. Either
/// way the store holds exactly the records the client reported (plus at most the one whose commit
/// it says has an unknown outcome: the server could not be asked before the deadline). Runs on a
/// throw-away cluster of its own, since it restarts it.
@Suite(.serialized, .requiresSFBinary) struct PostgresRestartTests {
    static let pgBin = ProcessInfo.processInfo.environment["PG_BIN"] ?? "/usr/lib/postgresql/15/bin"
    static let clusterUsable = FileManager.default.isExecutableFile(atPath: pgBin + "/pg_ctl") && getuid() == 0
    static let records = 4000

    /// A cluster of this suite's own, stopped and deleted at the end.
    final class Cluster {
        let directory: String
        let url: String
        let scratch: Scratch
        let passwordFile: String
        let keyFile: String
        let binary: String

        init() throws {
            scratch = try Scratch()
            // Beside the scratch directory, not in it: the server runs as `postgres`, which cannot enter it.
            directory = "/tmp/sf-pg-restart-" + UUID().uuidString.lowercased()
            let script = TestSupport.packageRoot.appendingPathComponent("scripts/postgres-test-cluster.sh").path
            let started = try TestSupport.run("python3", [
                "-c", Self.detached, "/bin/bash", script, "start", directory,
            ])
            try #require(started.status == 0, "\(started.stderrText)")
            url = started.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            passwordFile = directory + "/password"
            keyFile = try scratch.write("store.key", Data((0..<32).map { _ in UInt8.random(in: 0...255) }))
            binary = try #require(TestSupport.sfBinary).path
        }

        /// Runs a command that starts a daemon (the server) through Python's subprocess, in a
        /// session of its own with every other descriptor closed, and passes its output on.
        /// (Started straight from the test process, the script's exit was never noticed.)
        static let detached = """
            import subprocess, sys
            r = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, capture_output=True, text=True, start_new_session=True)
            sys.stdout.write(r.stdout); sys.stderr.write(r.stderr); sys.exit(r.returncode)
            """

        deinit {
            let script = TestSupport.packageRoot.appendingPathComponent("scripts/postgres-test-cluster.sh").path
            _ = try? TestSupport.run("/bin/bash", [script, "stop", directory])
        }

        func count() throws -> Int {
            let listed = try TestSupport.run(binary, ["records", "list", "--postgres", url, "--postgres-password-file", passwordFile])
            // Before the first add there is no store (list creates none): no records.
            if listed.status == 1, listed.stderrText.contains("no store tables") { return 0 }
            try #require(listed.status == 0, "\(listed.stderrText)")
            return listed.stdoutText.split(separator: "\n").count
        }

        func startAdding(parameters: String = "") throws -> BackgroundProcess {
            try BackgroundProcess([
                binary, "records", "add", "--postgres", url + parameters, "--postgres-password-file", passwordFile, "--key-file", keyFile,
                "--field", "w=x", "--indexed", "k=1", "--repeat-count", "\(PostgresRestartTests.records)",
            ])
        }

        /// The number of records `sf records list` finds under table prefix `prefix`.
        func count(prefix: String) throws -> Int {
            let listed = try TestSupport.run(binary, ["records", "list", "--postgres", url + "?prefix=\(prefix)", "--postgres-password-file", passwordFile])
            if listed.status == 1, listed.stderrText.contains("no store tables") { return 0 }
            try #require(listed.status == 0, "\(listed.stderrText)")
            return listed.stdoutText.split(separator: "\n").count
        }

        /// Whether another session's open transaction has written to `table`: it holds the
        /// table's `RowExclusiveLock` from its first insert until it ends.
        func isWriting(_ table: String) throws -> Bool {
            let password = try String(contentsOfFile: passwordFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let result = try TestSupport.run("psql", [
                url, "-Atc",
                "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = '\(table)' "
                    + "AND l.mode = 'RowExclusiveLock' AND l.granted AND l.pid <> pg_backend_pid()",
            ], environment: ["PGPASSWORD": password])
            let count = try #require(Int(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)), "psql: \(result.stderrText)")
            try #require(result.status == 0, "psql: \(result.stderrText)")
            return count > 0
        }

        /// Stops every server process (SIGSTOP) until `client` exits (at most `timeout` seconds),
        /// then lets them go on; the client's exit status.
        func stopServer(until client: BackgroundProcess, timeout: TimeInterval) throws -> Int32? {
            let processes = try serverProcesses()
            for pid in processes { kill(pid, SIGSTOP) }
            defer { for pid in processes { kill(pid, SIGCONT) } }
            return client.waitForExit(timeout: timeout)
        }

        /// The postmaster and its children.
        func serverProcesses() throws -> [pid_t] {
            let pidFile = try String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)
            let postmaster = try #require(pidFile.split(separator: "\n").first.flatMap { pid_t($0) })
            let children = try TestSupport.run("pgrep", ["-P", "\(postmaster)"]).stdoutText.split(separator: "\n").compactMap { pid_t($0) }
            return [postmaster] + children
        }
    }

    /// An export of `count` records (a store of this suite's scratch directory), written to a file.
    static func export(count: Int, in cluster: Cluster) throws -> String {
        let source = try RecordStore(path: cluster.scratch.path("source.db"))
        try source.createCollection("notes", schema: try RecordSchema(["w": .clear, "secret": .sealedIndexed]))
        let key = SecretBytes(try Data(contentsOf: URL(fileURLWithPath: cluster.keyFile)))
        try source.unlock(with: try KeyItemSealer(key: key))
        try source.add(contentsOf: (0..<count).map { ["w": .string("note \($0)"), "secret": .string("s\($0)")] }, to: "notes")
        var lines: [String] = []
        try source.export { lines.append($0) }
        return try cluster.scratch.write("export.jsonl", lines.joined(separator: "\n") + "\n")
    }

    @Test("restart -m fast and -m immediate during an import: it completes, every record once; SIGSTOP: a deadline error, nothing imported",
          .enabled(if: clusterUsable || TestSupport.isCI, "needs root and PostgreSQL 15 in PG_BIN"), .hangBackstop)
    func aRestartDuringAnImportNeverHalfImports() throws {
        try #require(Self.clusterUsable, "apt-get install postgresql-15, and run as root")
        let cluster = try Cluster()
        let count = 60_000
        let export = try Self.export(count: count, in: cluster)
        for (run, mode) in ["fast", "immediate", "stop"].enumerated() {
            let prefix = "import\(run)_"
            let parameters = mode == "stop" ? "&connect_timeout=2&statement_timeout=2000&transaction_timeout=6000" : ""
            let importing = try BackgroundProcess([
                cluster.binary, "records", "import", "--postgres", cluster.url + "?prefix=\(prefix)" + parameters,
                "--postgres-password-file", cluster.passwordFile, "--input", export,
            ])
            defer { importing.kill() }
            // Once the import is inserting records (an event the server reports).
            var polls = 0
            while try !cluster.isWriting(prefix + "records"), importing.isRunning {
                polls += 1
                try #require(polls < 3000, "the import never started inserting: \(importing.standardError)")
                usleep(20_000)
            }
            if mode == "stop" {
                let exited = try cluster.stopServer(until: importing, timeout: 120)
                #expect(exited == 1, "the import ended while the server was stopped: \(importing.standardError)")
                #expect(importing.standardError.contains("deadline"), "\(importing.standardError)")
                #expect(try cluster.count(prefix: prefix) == 0, "all or nothing")
                continue
            }
            let restart = try TestSupport.run("python3", [
                "-c", Cluster.detached, "/bin/sh", "-c", "runuser -u postgres -- \"$0\"/pg_ctl -D \"$1\"/data -l \"$1\"/server.log -m \"$2\" -w restart </dev/null >/dev/null 2>>\"$1\"/pg_ctl.log",
                Self.pgBin, cluster.directory, mode,
            ])
            try #require(restart.status == 0, "\(restart.stderrText)")
            #expect(importing.isRunning, "-m \(mode): the import ended before the restart did; make it longer")
            #expect(importing.waitForExit(timeout: 300) == 0, "-m \(mode): \(importing.standardError)")
            #expect(importing.standardError.contains("imported \(count) records"), "-m \(mode): \(importing.standardError)")
            #expect(try cluster.count(prefix: prefix) == count, "-m \(mode): every record once")
        }
    }

    @Test("restart -m fast and -m immediate during a 4,000-record add: the run completes; SIGSTOP: a deadline error; the store matches",
          .enabled(if: clusterUsable || TestSupport.isCI, "needs root and PostgreSQL 15 in PG_BIN"), .hangBackstop)
    func restartsAndStopsNeverHang() throws {
        try #require(Self.clusterUsable, "apt-get install postgresql-15, and run as root")
        let cluster = try Cluster()
        for mode in ["fast", "immediate", "fast", "immediate", "fast", "immediate"] {
            let before = try cluster.count()
            let adding = try cluster.startAdding()
            defer { adding.kill() }
            // Restart once the client is well under way (an event: records printed).
            #expect(adding.wait(timeout: 300) { $0.outputLines.count >= 300 || !$0.isRunning }, "\(adding.standardError)")
            // The restarted server must not inherit this test's pipes (reading them would wait for it).
            let restart = try TestSupport.run("python3", [
                "-c", Cluster.detached, "/bin/sh", "-c", "runuser -u postgres -- \"$0\"/pg_ctl -D \"$1\"/data -l \"$1\"/server.log -m \"$2\" -w restart </dev/null >/dev/null 2>>\"$1\"/pg_ctl.log",
                Self.pgBin, cluster.directory, mode,
            ])
            try #require(restart.status == 0, "\(restart.stderrText)")
            #expect(adding.waitForExit(timeout: 300) == 0, "-m \(mode): \(adding.standardError)")
            #expect(adding.outputLines.count == Self.records, "-m \(mode)")
            #expect(try cluster.count() - before == adding.outputLines.count, "-m \(mode): the store holds what the client reported")
        }
        // A server that stops answering: every statement and connection has a deadline (2 s each,
        // 6 s a transaction), so the client gives up while the server is still stopped.
        for _ in 0..<2 {
            let before = try cluster.count()
            let adding = try cluster.startAdding(parameters: "?connect_timeout=2&statement_timeout=2000&transaction_timeout=6000")
            defer { adding.kill() }
            #expect(adding.wait(timeout: 300) { $0.outputLines.count >= 300 || !$0.isRunning }, "\(adding.standardError)")
            let exited = try cluster.stopServer(until: adding, timeout: 60)
            #expect(exited == 1, "the client ended while the server was stopped: \(adding.standardError)")
            #expect(adding.standardError.contains("deadline"), "\(adding.standardError)")
            let grown = try cluster.count() - before
            let printed = adding.outputLines.count
            let unknown = adding.standardError.contains("unknown")
            #expect(grown == printed || (unknown && grown == printed + 1), "stored \(grown), reported \(printed): \(adding.standardError)")
        }
    }

    /// A COMMIT lost as the server crashes, before its log writer flushed the transaction's
    /// records: recovery hands that transaction's id out again, and once another transaction has
    /// committed under it, `txid_status` says "committed" for a change that was lost. The client
    /// sees that the server restarted and does not take that answer: an add asks its records
    /// themselves, is run again and stored once (taking the answer as is, it reported a record that
    /// is not there), and so is an import; an update, which has nothing of its own to ask, reports
    /// the outcome unknown, never success.
    @Test("a COMMIT lost in a crash is not taken as committed when its transaction id is handed out again",
          .enabled(if: clusterUsable || TestSupport.isCI, "needs root and PostgreSQL 15 in PG_BIN"), .hangBackstop)
    func aCommitLostInACrashIsNotConfusedWithAReusedTransactionId() throws {
        try #require(Self.clusterUsable, "apt-get install postgresql-15, and run as root")
        let cluster = try Cluster()
        let password = try String(contentsOfFile: cluster.passwordFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let configuration = try PostgresRecordStorage.Configuration(url: cluster.url, password: SecretBytes(Data(password.utf8)))
        let direct = try PostgresRecordStorage(configuration: configuration)
        let relay = try CommitCuttingRelay(serverPort: configuration.port)
        defer { relay.stop() }
        var relayed = configuration
        relayed.host = "127.0.0.1"
        relayed.port = relay.port
        relayed.tls = .disabled
        // Room for the crash and the restart while the client's connection waits in the relay.
        relayed.connectTimeoutSeconds = 120
        relayed.transactionTimeoutSeconds = 240
        let store = try RecordStore(storage: try PostgresRecordStorage(configuration: relayed))
        try store.createCollection("gifts", schema: try RecordSchema(["toWhom": .clear]))
        try store.unlock(with: try KeyItemSealer(key: SecretBytes.random(count: 32)))

        // Runs `operation` while its COMMIT is kept from the server, which crashes at once and
        // recovers: the whole server (an immediate shutdown, no checkpoint, then a start), or
        // one server process (SIGKILL: the postmaster ends the others and recovers without
        // restarting itself). Then 20 transactions commit under the ids recovery hands out
        // again; the client's new connection waits in the relay meanwhile.
        enum Crash { case server, oneProcess }
        func crashing<T: Sendable>(_ crash: Crash, _ operation: @escaping @Sendable () throws(RecordsError) -> T) throws -> Result<T, RecordsError> {
            let postmaster = try cluster.serverProcesses()[0]
            let victim: pid_t
            switch crash {
            case .server:
                victim = postmaster
            case .oneProcess:
                victim = try #require(try direct.queryText("SELECT pg_backend_pid()::text").first.flatMap { $0.flatMap { pid_t($0) } })
            }
            let cuts = relay.cuts
            relay.holdNewConnections(true)
            relay.arm(.request) { kill(victim, crash == .server ? SIGQUIT : SIGKILL) }
            let call = BackgroundCall(operation)
            let deadline = Date(timeIntervalSinceNow: 60)
            // Ended: gone, or a zombie (the postmaster's parent may be slow to reap it).
            func ended() -> Bool {
                guard kill(victim, 0) == 0 else { return true }
                let stat = (try? String(contentsOfFile: "/proc/\(victim)/stat", encoding: .utf8)) ?? ""
                return stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") == true
            }
            while relay.cuts == cuts || !ended(), Date() < deadline { usleep(10_000) }
            try #require(relay.cuts == cuts + 1 && ended(), "the COMMIT was not cut, or the process did not end")
            if crash == .server {
                let start = try TestSupport.run("python3", [
                    "-c", Cluster.detached, "/bin/sh", "-c",
                    "runuser -u postgres -- \"$0\"/pg_ctl -D \"$1\"/data -l \"$1\"/server.log -w start </dev/null >/dev/null 2>>\"$1\"/pg_ctl.log",
                    Self.pgBin, cluster.directory,
                ])
                try #require(start.status == 0, "\(start.stderrText)")
            }
            // (`direct` reconnects, waiting while the server recovers.)
            for _ in 0..<20 { try direct.execute("SELECT txid_current()") }
            relay.holdNewConnections(false)
            return try #require(call.result(waitingUntil: .now() + 240))
        }

        let id = try crashing(.oneProcess) { () throws(RecordsError) in try store.add(["toWhom": "Alice"], to: "gifts") }.get()
        let reader = try RecordStore(storage: direct)
        #expect(try reader.search(in: "gifts").map(\.id) == [id], "the add is stored once")
        let updated = try crashing(.server) { () throws(RecordsError) in try store.update(id, setting: ["toWhom": "Bob"]) }
        let toWhom = try reader.record(id).clearFields["toWhom"]
        switch updated {
        case .failure(.storage(let failure)):
            #expect(failure.cause == .outcomeUnknown && "\(failure)".contains("restarted"), "\(failure)")
            #expect(toWhom == "Alice", "the update was lost in the crash")
        case .success:
            // Only if the server's log writer flushed the update's records before the crash (its id
            // then stays its own, and reads as rolled back): it was run again.
            #expect(toWhom == "Bob", "the update was reported done but is not stored")
        case .failure(let error):
            Issue.record("\(error)")
        }
        // An import asks for its first record, as an add does.
        var export: [String] = []
        _ = try store.export { export.append($0) }
        try store.delete(id)
        let lines = export
        let imported = try crashing(.oneProcess) { () throws(RecordsError) in try store.importLines(lines) }.get()
        #expect(imported == 1)
        #expect(try reader.search(in: "gifts").map(\.id) == [id], "the import is stored once")
    }
}
