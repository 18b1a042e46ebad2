import Foundation
import SFTestSupport
import Testing

/// What a server (or a proxy) that lies about its answers' shape does to the client: a row of
/// fewer columns than the statement selects made postgres-nio trap as it was decoded (a
/// precondition), so the process died; now a typed error, exit 1.
@Suite(.requiresSFBinary) struct LyingPostgresTests {
    @Test("rows of fewer columns than selected end the command with a typed error, not a crash")
    func shortRowsGiveATypedError() throws {
        let server = try BackgroundProcess([
            TestSupport.which("python3") ?? "/usr/bin/python3", TestSupport.packageRoot.appendingPathComponent("Tests/peers/pg_short_rows.py").path,
        ])
        defer { server.kill() }
        let listening = try #require(server.waitForEvent("listening"), "\(server.standardError)")
        let port = try #require(listening["port"] as? Int)
        let listed = try sf(["records", "list", "--postgres", "postgres://someone@127.0.0.1:\(port)/db?sslmode=disable&connect_timeout=5&transaction_timeout=10000"],
            environment: ["PGPASSWORD": ""])
        #expect(server.waitForEvent("rows") != nil, "the client never read a row: \(listed.stderrText)")
        #expect(listed.status == 1, "exit \(listed.status): \(listed.stderrText)")
        // The first statement that selects columns meets the short row (the transaction's
        // timeouts, two columns, since they are set with its BEGIN).
        #expect(listed.stderrText.contains("a row of 0 values, where 2 were selected"), "\(listed.stderrText)")
    }
}
