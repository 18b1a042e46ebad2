import Foundation
import SFTestSupport
@testable import SecureRecords
@testable import SecureRecordsPostgres
import SecureCore
import Testing

/// SecureRecords on PostgreSQL through PgBouncer, the pooler most teams put in front of their
/// server, in transaction pooling (each transaction runs on whichever server connection is free,
/// and startup parameters it does not know are refused). Before the storage sent its timeouts
/// with each transaction, every connection was refused: "unsupported startup parameter:
/// statement_timeout".
@Suite(.serialized) struct PgBouncerTests {
    /// A PgBouncer (transaction pooling, two server connections) in front of the test server, run
    /// as the `postgres` user (it refuses root) from a private directory, on a free loopback port.
    final class Bouncer {
        struct NotStarted: Error { let log: String }
        let port: Int
        private let directory: String
        private let process: BackgroundProcess

        init() throws {
            guard let url = TestSupport.postgresURL, let server = URLComponents(string: url), let serverPort = server.port,
                let user = server.user
            else { throw PeerMissing(peer: .postgres) }
            let database = String(server.path.dropFirst())
            let executable = try TestSupport.path(of: .pgbouncer)
            // Under /tmp, which the postgres user can reach whatever TMPDIR is; removed on every
            // path (it holds the database password).
            directory = "/tmp/sf-pgbouncer-" + UUID().uuidString.lowercased()
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            do {
                let password = (TestSupport.postgresPassword ?? "").replacingOccurrences(of: "\"", with: "\"\"")
                try Data("\"\(user)\" \"\(password)\"\n".utf8).write(to: URL(fileURLWithPath: directory + "/userlist.txt"))
                // A port found free may be taken before PgBouncer binds it: up to three tries.
                var started: (process: BackgroundProcess, port: Int)?
                var log = ""
                for _ in 0..<3 where started == nil {
                    let (probe, port) = try TestSupport.loopbackSocket(listening: true, port: 0)
                    close(probe)
                    let configuration = """
                        [databases]
                        \(database) = host=127.0.0.1 port=\(serverPort) dbname=\(database)
                        [pgbouncer]
                        listen_addr = 127.0.0.1
                        listen_port = \(port)
                        unix_socket_dir =
                        auth_type = scram-sha-256
                        auth_file = \(directory)/userlist.txt
                        pool_mode = transaction
                        default_pool_size = 2
                        max_client_conn = 200
                        """
                    try Data(configuration.utf8).write(to: URL(fileURLWithPath: directory + "/pgbouncer.ini"))
                    let chown = try TestSupport.run("chown", ["-R", "postgres", directory])
                    guard chown.status == 0 else { throw NotStarted(log: "chown: \(chown.stderrText)") }
                    let process = try BackgroundProcess(["runuser", "-u", "postgres", "--", executable, directory + "/pgbouncer.ini"])
                    let listening = "listening on 127.0.0.1:\(port)"
                    if process.wait(timeout: 60, until: { $0.standardError.contains(listening) || !$0.isRunning }), process.isRunning {
                        started = (process, port)
                    } else {
                        log = process.standardError
                        process.kill()
                    }
                }
                guard let started else { throw NotStarted(log: log) }
                (process, port) = started
            } catch {
                try? FileManager.default.removeItem(atPath: directory)
                throw error
            }
        }

        func stop() {
            process.kill()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// The test server's configuration for `schema`, through the pooler.
        func configuration(schema: String, prefix: String = "sfr_") throws -> PostgresRecordStorage.Configuration {
            var configuration = try postgresConfiguration(schema: schema, prefix: prefix)
            configuration.host = "127.0.0.1"
            configuration.port = port
            return configuration
        }
    }

    /// Every kind of call goes through, with four clients at once on two server connections, and
    /// the server still cancels a statement past its timeout (the timeouts reach the server
    /// connection each transaction runs on).
    @Test(.requires(.postgres, .pgbouncer), .hangBackstop)
    func aStoreWorksThroughPgBouncerInTransactionPooling() throws {
        let scratch = try RecordsScratch(.postgres)
        _ = try scratch.storage()  // drops the schema with the scratch
        let bouncer = try Bouncer()
        defer { bouncer.stop() }
        let storage = try PostgresRecordStorage(configuration: try bouncer.configuration(schema: scratch.schema))
        defer { storage.close() }
        let store = try RecordStore(storage: storage, configuration: testConfiguration)
        try store.createCollection("gifts", schema: giftSchema)
        try store.unlock(with: appSealer)
        // A bulk load (COPY), single adds, searches by clear field, blind index and full text.
        let bulk = try store.add(
            contentsOf: (0..<300).map { ["toWhom": .string("friend \($0)"), "description": "a bicycle", "ssn": .string("ssn-\($0 % 7)")] },
            to: "gifts")
        let carol = try store.add(["toWhom": "Carol", "description": "a kite", "ssn": "ssn-c"], to: "gifts")
        #expect(try store.search(in: "gifts", [.equals(field: "ssn", value: "ssn-3")]).count == 43)  // 3, 10, ..., 297
        #expect(try store.search(in: "gifts", [.fullText("Carol")]).map(\.id) == [carol])
        try store.update(carol, setting: ["description": "a red kite"])
        #expect(try store.open(carol).fields["description"] == "a red kite")
        // Four clients at once, each with its own connections, on the pooler's two.
        let pooled = try bouncer.configuration(schema: scratch.schema)
        let adds = (0..<4).map { client in
            BackgroundCall { () throws(RecordsError) -> [UUID] in
                let other = try RecordStore(storage: try PostgresRecordStorage(configuration: pooled), configuration: testConfiguration)
                try other.unlock(with: appSealer)
                return try (0..<25).map { (i) throws(RecordsError) in
                    try other.add(["toWhom": .string("client \(client) gift \(i)"), "description": "d", "ssn": "ssn-x"], to: "gifts")
                }
            }
        }
        var added: [UUID] = []
        for call in adds { added += try #require(call.result(waitingUntil: .now() + 600)).get() }
        #expect(Set(added).count == 100)
        #expect(Set(try store.search(in: "gifts", [.equals(field: "ssn", value: "ssn-x")]).map(\.id)) == Set(added))
        // A key rotation, then an export imported into a new store, both through the pooler.
        #expect(try store.rotateStoreKey(with: appSealer).resealed == 401)
        var lines: [String] = []
        #expect(try store.export { lines.append($0) } == 401)
        let copyStorage = try PostgresRecordStorage(configuration: try bouncer.configuration(schema: scratch.schema, prefix: "copy_"))
        defer { copyStorage.close() }
        let copy = try RecordStore(storage: copyStorage, importing: lines, configuration: testConfiguration)
        try copy.unlock(with: appSealer)
        #expect(try copy.search(in: "gifts").count == 401)
        #expect(try copy.open(bulk[5]).fields["description"] == "a bicycle")
        // The server's own statement_timeout, given with the transaction, cancels a long statement.
        var configuration = try bouncer.configuration(schema: scratch.schema)
        configuration.statementTimeoutSeconds = 1
        let short = try PostgresRecordStorage(configuration: configuration)
        defer { short.close() }
        #expect {
            _ = try short.queryText("SELECT pg_sleep(30)::text")
        } throws: { error in
            guard case RecordsError.storage(let failure) = error, case .server(let sqlState) = failure.cause else { return false }
            return sqlState == "57014"
        }
    }
}
