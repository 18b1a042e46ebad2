import Foundation
import SFTestSupport
import Testing

/// Issue 19: a PostgreSQL server that restarts or stops answering never hangs `sf records add`.
/// Each run adds 4,000 records while the server restarts (`pg_ctl restart -m fast`, `-m immediate`)
/// or is stopped (SIGSTOP of every server process): a restart under the deadline lets the run
/// complete; a stopped server ends the run with a deadline error while it is still stopped. Either
/// way the store holds exactly the records the client reported (plus at most the one whose commit
/// it says has an unknown outcome). Runs on a throw-away cluster of its own, since it restarts it.
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
            try #require(listed.status == 0, "\(listed.stderrText)")
            return listed.stdoutText.split(separator: "\n").count
        }

        func startAdding(parameters: String = "") throws -> BackgroundProcess {
            try BackgroundProcess([
                binary, "records", "add", "--postgres", url + parameters, "--postgres-password-file", passwordFile, "--key-file", keyFile,
                "--field", "w=x", "--indexed", "k=1", "--repeat-count", "\(PostgresRestartTests.records)",
            ])
        }

        /// The postmaster and its children.
        func serverProcesses() throws -> [pid_t] {
            let pidFile = try String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)
            let postmaster = try #require(pidFile.split(separator: "\n").first.flatMap { pid_t($0) })
            let children = try TestSupport.run("pgrep", ["-P", "\(postmaster)"]).stdoutText.split(separator: "\n").compactMap { pid_t($0) }
            return [postmaster] + children
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
            #expect(adding.wait(timeout: 60) { $0.outputLines.count >= 300 || !$0.isRunning }, "\(adding.standardError)")
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
            #expect(adding.wait(timeout: 60) { $0.outputLines.count >= 300 || !$0.isRunning }, "\(adding.standardError)")
            let processes = try cluster.serverProcesses()
            for pid in processes { kill(pid, SIGSTOP) }
            let exited = adding.waitForExit(timeout: 60)
            for pid in processes { kill(pid, SIGCONT) }
            #expect(exited == 1, "the client ended while the server was stopped: \(adding.standardError)")
            #expect(adding.standardError.contains("deadline"), "\(adding.standardError)")
            let grown = try cluster.count() - before
            let printed = adding.outputLines.count
            let unknown = adding.standardError.contains("unknown")
            #expect(grown == printed || (unknown && grown == printed + 1), "stored \(grown), reported \(printed): \(adding.standardError)")
        }
    }
}
