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
        #expect(try db.records(["delete", aliceId]).status == 0)
        #expect(try db.records(["list"]).stdoutText.split(separator: "\n").count == 1)
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
        #expect(try db.records(["list"], environment: ["PGPASSWORD": "wrong password"]).status == 0)
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
}
