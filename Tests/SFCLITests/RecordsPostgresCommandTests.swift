import Foundation
import SFTestSupport
import SecureCore
import SecureRecordsPostgres
import Testing

/// `sf records --postgres`: the Xmas round trip against a real PostgreSQL server, the server
/// password from a file or PGPASSWORD (never argv), and URLs carrying a password refused.
@Suite(.serialized, .requires(.postgres), .requiresSFBinary) struct RecordsPostgresCommandTests {
    /// A fresh schema on the test server (dropped afterwards), its URL and password file.
    final class Database: @unchecked Sendable {
        let scratch: Scratch
        let schema = "sfr_cli_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        let url: String
        let passwordFile: String
        let password: String

        init() throws {
            scratch = try Scratch()
            guard let base = TestSupport.postgresURL else { throw PeerMissing(peer: .postgres) }
            url = base + "?schema=\(schema)"
            password = TestSupport.postgresPassword ?? ""
            passwordFile = try scratch.write("pg.pw", password + "\n")
        }

        deinit {
            // Any connection will do to drop the schema: one with an empty table prefix in it.
            var configuration = try? PostgresRecordStorage.Configuration(url: url, password: SecretBytes(Data(password.utf8)))
            configuration?.tablePrefix = "cleanup_"
            if let configuration, let admin = try? PostgresRecordStorage(configuration: configuration) {
                try? admin.execute("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
                admin.close()
            }
        }

        /// `sf records ARGUMENTS --postgres URL`, with `environment` (PGPASSWORD unset unless given).
        func records(_ arguments: [String], file: Bool = true, environment: [String: String] = ["PGPASSWORD": ""]) throws -> ProcessResult {
            var full = ["records"] + arguments + ["--postgres", url]
            if file { full += ["--postgres-password-file", passwordFile] }
            return try sf(full, environment: environment)
        }
    }

    @Test func xmasRoundTripOnPostgres() throws {
        let db = try Database()
        let alice = try db.scratch.write("alice.pw", "for Alice\n")
        let bob = try db.scratch.write("bob.pw", "for Bob\n")
        let add = try db.records(["add", "--collection", "gifts", "--field", "toWhom=Alice", "--sealed", "description=a red bicycle",
            "--password-file", alice, "--scrypt-log-n", "12"])
        #expect(add.status == 0, "\(add.stderrText)")
        let aliceId = add.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(UUID(uuidString: aliceId) != nil)
        // The server password from PGPASSWORD instead of a file.
        let addBob = try db.records(["add", "--collection", "gifts", "--field", "toWhom=Bob", "--sealed", "description=a kite",
            "--password-file", bob, "--scrypt-log-n", "12"], file: false, environment: ["PGPASSWORD": db.password])
        #expect(addBob.status == 0, "\(addBob.stderrText)")

        let search = try db.records(["search", "toWhom=Alice"])
        #expect(search.stdoutText == "\(aliceId)\tgifts\ttoWhom=Alice\tdescription=<sealed>\n", "\(search.stderrText)")
        #expect(try db.records(["search", "--text", "bob"]).stdoutText.split(separator: "\n").count == 1)
        #expect(try db.records(["list"]).stdoutText.split(separator: "\n").count == 2)
        let shown = try db.records(["show", "--decrypt", "--password-file", alice, aliceId])
        #expect(shown.status == 0, "\(shown.stderrText)")
        #expect(shown.stdoutText.contains("description: a red bicycle"))
        let wrong = try db.records(["show", "--decrypt", "--password-file", bob, aliceId])
        #expect(wrong.status == 1 && wrong.stderrText.contains("failed to open") && !wrong.stdoutText.contains("bicycle"))

        // Export from PostgreSQL, import into a new SQLite file: the same store, everything opens.
        let export = try db.records(["export", "-o", db.scratch.path("e.jsonl")])
        #expect(export.status == 0, "\(export.stderrText)")
        let copy = db.scratch.path("copy.db")
        #expect(try sf(["records", "import", "--store", copy, "-i", db.scratch.path("e.jsonl")]).status == 0)
        #expect(try sf(["records", "show", "--store", copy, "--decrypt", "--password-file", alice, aliceId]).stdoutText.contains("a red bicycle"))
        // Import into an empty PostgreSQL store (another prefix): it becomes the exported store; again: duplicates.
        let copyURL = db.url + "&prefix=copy_"
        let importArguments = ["records", "import", "--postgres", copyURL, "--postgres-password-file", db.passwordFile, "-i", db.scratch.path("e.jsonl")]
        let imported = try sf(importArguments, environment: ["PGPASSWORD": ""])
        #expect(imported.status == 0 && imported.stderrText.contains("imported 2 records"), "\(imported.stderrText)")
        #expect(try sf(["records", "show", "--postgres", copyURL, "--postgres-password-file", db.passwordFile, "--decrypt", "--password-file", alice,
            aliceId], environment: ["PGPASSWORD": ""]).stdoutText.contains("a red bicycle"))
        let twice = try sf(importArguments, environment: ["PGPASSWORD": ""])
        #expect(twice.status == 1 && twice.stderrText.contains("already exists"), "\(twice.stderrText)")
        // An input that is not a regular file (here a pipe, as `-i <(…)` gives), which a new store
        // reads twice: copied first, so it imports into PostgreSQL and a new SQLite file alike.
        let exported = try Data(contentsOf: URL(fileURLWithPath: db.scratch.path("e.jsonl")))
        let pipeURL = db.url + "&prefix=pipe_"
        let piped = try sf(["records", "import", "--postgres", pipeURL, "--postgres-password-file", db.passwordFile, "-i", "/dev/stdin"],
                           stdin: exported, environment: ["PGPASSWORD": ""])
        #expect(piped.status == 0 && piped.stderrText.contains("imported 2 records"), "\(piped.stderrText)")
        let pipedFile = try sf(["records", "import", "--store", db.scratch.path("piped.db"), "-i", "/dev/stdin"], stdin: exported)
        #expect(pipedFile.status == 0 && pipedFile.stderrText.contains("imported 2 records"), "\(pipedFile.stderrText)")
        #expect(try db.records(["delete", aliceId]).status == 0)
        #expect(try db.records(["list"]).stdoutText.split(separator: "\n").count == 1)
    }

    /// A host name that resolves to several loopback addresses, with the server at one of them
    /// only (`::1` first, then `127.0.0.1`, as `localhost` is on many systems), is tried at each in
    /// turn, as libpq does, not at the first alone until the connect deadline. The name comes from
    /// a private /etc/hosts in a mount namespace of the test's own (`unshare -m`, as root).
    @Test(.requires(.unshare), .hangBackstop) func aNameWithSeveralLoopbackAddressesIsTriedAtEach() throws {
        let db = try Database()
        let hosts = try db.scratch.write("hosts", "::1 dual.test\n127.0.0.1 dual.test\n")
        let url = db.url.replacingOccurrences(of: "@127.0.0.1:", with: "@dual.test:") + "&connect_timeout=5"
        try #require(url.contains("@dual.test:"), "the test server is not at 127.0.0.1: \(db.url)")
        let binary = try #require(TestSupport.sfBinary).path
        let key = try db.scratch.write("key", Data((KeyFileTests.hex + "\n").utf8))
        // The order the resolver gives, then the command, in one namespace.
        let script = #"mount --bind "$1" /etc/hosts && getent ahosts dual.test | head -1 && shift && exec "$@""#
        let result = try TestSupport.run("unshare", ["-m", "sh", "-c", script, "sh", hosts, binary, "records", "add", "--postgres", url,
            "--postgres-password-file", db.passwordFile, "--collection", "c", "--key-file", key, "--field", "name=Ann"])
        // (getent prints the resolver's order: ::1 first here; with AI_ADDRCONFIG on a host without
        // IPv6 it may leave ::1 out, and then this only tests the one address.)
        #expect(result.status == 0, "resolver order \(result.stdoutText): \(result.stderrText)")
    }

    /// A command that reads, given a schema or table prefix where there is no store (a typo),
    /// fails and makes nothing there; `add` makes the store.
    @Test func readingAMissingStoreMakesNone() throws {
        let db = try Database()
        let key = try db.scratch.write("key", Data((KeyFileTests.hex + "\n").utf8))
        let id = "01a2231a-a65b-724f-b8cf-e8b0d754d755"
        let typoSchema = db.url + "x", typoPrefix = db.url + "&prefix=tpyo_"
        for url in [typoSchema, typoPrefix] {
            for arguments in [["status"], ["list"], ["search", "name=Ann", "--key-file", key], ["show", id], ["export"], ["delete", id]] {
                let result = try sf(["records"] + arguments + ["--postgres", url, "--postgres-password-file", db.passwordFile])
                #expect(result.status == 1 && result.stderrText.contains("no store tables in schema"), "\(arguments[0]): \(result.stderrText)")
            }
        }
        // Nothing was made: no schema by the mistyped name, no table with the mistyped prefix.
        var configuration = try PostgresRecordStorage.Configuration(url: db.url, password: SecretBytes(Data(db.password.utf8)))
        configuration.tablePrefix = "probe_"
        let probe = try PostgresRecordStorage(configuration: configuration)
        defer { probe.close() }
        #expect(try probe.queryText("SELECT count(*)::text FROM pg_namespace WHERE nspname = '\(db.schema)x'") == ["0"])
        #expect(try probe.queryText("SELECT count(*)::text FROM pg_tables WHERE schemaname = '\(db.schema)' AND tablename LIKE 'tpyo\\_%'") == ["0"])
        let added = try sf(["records", "add", "--postgres", typoPrefix, "--postgres-password-file", db.passwordFile,
                            "--collection", "c", "--key-file", key, "--field", "name=Ann"])
        #expect(added.status == 0, "\(added.stderrText)")
        #expect(try sf(["records", "status", "--postgres", typoPrefix, "--postgres-password-file", db.passwordFile]).status == 0)
    }

    @Test func serverPasswordNeverFromArgvAndWrongOnesFail() throws {
        let db = try Database()
        // A URL with a password is refused before connecting, without echoing it.
        let refused = try sf(["records", "list", "--postgres", "postgres://sf_test:hunter2@127.0.0.1:1/sf_test"])
        #expect(refused.status != 0)
        #expect(refused.stderrText.contains("contains a password"), "\(refused.stderrText)")
        #expect(!refused.stderrText.contains("hunter2"))
        // No --postgres-password-file and a wrong PGPASSWORD: a clear storage error, no crash.
        let wrong = try db.records(["list"], file: false, environment: ["PGPASSWORD": "wrong password"])
        #expect(wrong.status == 1, "\(wrong.stderrText)")
        #expect(wrong.stderrText.contains("password authentication failed") || wrong.stderrText.contains("28P01"), "\(wrong.stderrText)")
        // The file wins over the environment.
        let key = try db.scratch.write("key", Data((KeyFileTests.hex + "\n").utf8))
        let added = try db.records(["add", "--collection", "c", "--key-file", key, "--field", "name=Ann"], environment: ["PGPASSWORD": "wrong password"])
        #expect(added.status == 0, "\(added.stderrText)")
        // --store and --postgres together are refused.
        #expect(try db.records(["list", "--store", db.scratch.path("x.db")]).status != 0)
        // A server that is not there: a clear error.
        let down = try sf(["records", "list", "--postgres", "postgres://sf_test@127.0.0.1:1/sf_test?connect_timeout=3"], environment: ["PGPASSWORD": ""])
        #expect(down.status == 1)
        #expect(down.stderrText.contains("cannot connect"), "\(down.stderrText)")
    }

    /// A DNS resolver that never answers ends the connect at its deadline, with an error naming it:
    /// `sf` runs in a mount namespace of its own whose /etc/resolv.conf names a resolver on
    /// 127.0.0.77 that swallows every query (glibc would wait 30 s × 5 attempts). Before, the
    /// lookup that decides whether the host is loopback ran outside every deadline.
    @Test("a DNS resolver that never answers ends the connect at its connect_timeout, named in the error",
          .requires(.unshare), .hangBackstop)
    func aSilentResolverEndsTheConnectAtItsDeadline() throws {
        let scratch = try Scratch()
        let sink = try BackgroundProcess(["python3", "-c", """
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.77", 53))
            print('{"event": "ready"}', flush=True)
            while True: s.recvfrom(4096)
            """])
        defer { sink.kill() }
        try #require(sink.waitForEvent("ready") != nil, "the resolver sink did not start: \(sink.standardError)")
        let resolvConf = try scratch.write("resolv.conf", "nameserver 127.0.0.77\noptions timeout:30 attempts:5\n")
        let passwordFile = try scratch.write("pg.pw", "unused\n")
        let started = Date()
        let result = try TestSupport.run("unshare", [
            "--mount", "sh", "-c", "mount --bind \"$0\" /etc/resolv.conf && exec \"$1\" records list --postgres \"$2\" --postgres-password-file \"$3\"",
            resolvConf, try #require(TestSupport.sfBinary).path,
            "postgres://sf@db.sf-test.invalid:5432/sf?connect_timeout=2", passwordFile,
        ])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 1, "\(result.stderrText)")
        #expect(result.stderrText.contains("DNS resolver"), "\(result.stderrText)")
        // The resolver alone would hold it for 150 s; the deadline is 2 s (a generous margin for a busy machine).
        #expect(elapsed < 60, "the connect took \(elapsed) s")
    }

    /// A host name that does not resolve is final, as in libpq, not retried until the connect
    /// deadline (here 120 s), whichever TLS mode decides the path: `sf` runs in a mount namespace
    /// whose /etc/nsswitch.conf looks host names up in /etc/hosts alone, so the name's absence is
    /// the resolver's definite answer (no DNS server is asked).
    @Test("a host name that does not resolve is refused at once, naming it, whatever the sslmode", .requires(.unshare), .hangBackstop)
    func anUnresolvableHostIsFinal() throws {
        let scratch = try Scratch()
        let nsswitch = try scratch.write("nsswitch.conf", "hosts: files\n")
        let passwordFile = try scratch.write("pg.pw", "unused\n")
        for mode in ["", "&sslmode=require", "&sslmode=disable"] {
            let started = Date()
            let result = try TestSupport.run("unshare", [
                "--mount", "sh", "-c", "mount --bind \"$0\" /etc/nsswitch.conf && exec \"$1\" records list --postgres \"$2\" --postgres-password-file \"$3\"",
                nsswitch, try #require(TestSupport.sfBinary).path,
                "postgres://sf@db.sf-test.invalid:5432/sf?connect_timeout=120" + mode, passwordFile,
            ])
            let elapsed = Date().timeIntervalSince(started)
            #expect(result.status == 1, "\(mode): \(result.stderrText)")
            #expect(result.stderrText.contains("the host name db.sf-test.invalid does not resolve"), "\(mode): \(result.stderrText)")
            // Retried, it would take the whole 120 s; refused, a fraction of a second.
            #expect(elapsed < 60, "\(mode): the connect took \(elapsed) s")
        }
    }
}
