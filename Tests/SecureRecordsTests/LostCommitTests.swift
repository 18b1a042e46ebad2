import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureRecordsPostgres
import SecureCore
import Testing

/// A connection lost after a write's COMMIT was sent is settled by the server's record of that
/// transaction (`txid_status`), for every kind of write: the call returns as if nothing had
/// happened when the server committed, and runs again when it did not; a server process left idle
/// in the transaction (the COMMIT never reached it) is ended, not waited for.
@Suite struct LostCommitTests {
    /// A fresh store reached through a `CommitCuttingRelay` (in plain text, so that the relay sees
    /// the protocol), with its scratch schema and the same store's storage reached directly. The
    /// caller stops the relay.
    static func relayedStore() throws -> (scratch: RecordsScratch, direct: PostgresRecordStorage, relay: CommitCuttingRelay, store: RecordStore) {
        let scratch = try RecordsScratch(.postgres)
        let direct = try #require(try scratch.storage() as? PostgresRecordStorage)
        let relay = try CommitCuttingRelay(serverPort: direct.configuration.port)
        let configuration = throughRelay(direct.configuration, relay)
        do {
            let store = try RecordStore(storage: try PostgresRecordStorage(configuration: configuration), configuration: testConfiguration)
            return (scratch, direct, relay, store)
        } catch {
            relay.stop()
            throw error
        }
    }

    /// `configuration`, reaching the server through `relay` (in plain text).
    static func throughRelay(_ configuration: PostgresRecordStorage.Configuration, _ relay: CommitCuttingRelay) -> PostgresRecordStorage.Configuration {
        var configuration = configuration
        configuration.host = "127.0.0.1"
        configuration.port = relay.port
        configuration.tls = .disabled
        return configuration
    }

    /// Every kind of write loses the COMMIT of its first write transaction once, through a relay:
    /// `.answer`, the server committed and only its answer was lost (before, a collection, a key, an
    /// update, a delete gave `outcomeUnknown`, and a delete retried by hand `recordNotFound`);
    /// `.fatalAnswer`, the same with the answer replaced by a FATAL error of class 08, as PgBouncer
    /// reports a lost server connection (before, the call failed with SQLSTATE 08P01, its write stored);
    /// `.errorAnswer`, the same with an error of severity ERROR, then the end of the connection, as
    /// a pooler may relay its lost server (before, the call failed with 08P01, its write stored:
    /// an ERROR was taken to mean the transaction was still there, rolled back);
    /// `.errorAnswerKeepingTheSession`, the same error but the connection kept, as a pooler in
    /// transaction mode would (the ROLLBACK that followed succeeded, and the call failed with its
    /// write stored);
    /// `.serializationFailureKeepingTheSession`, the same with a serialization failure (40001), which
    /// a real server never gives a COMMIT that committed (before, the transaction was run again: a
    /// second key, an add's duplicateRecord);
    /// `.garbledAnswer`, the same with an answer the client cannot read (before, a failure, its
    /// write stored);
    /// `.request`, the COMMIT never reached the server, whose process stays in the transaction
    /// holding its locks (before, an add read that its record was missing, ran again, and waited on
    /// that process's row until the lock timeout). Each call succeeds, and the store holds each
    /// change once.
    @Test(.requires(.postgres), arguments: [
        CommitCuttingRelay.Cut.answer, .fatalAnswer, .errorAnswer, .errorAnswerKeepingTheSession, .serializationFailureKeepingTheSession,
        .garbledAnswer, .request,
    ])
    func everyWriteWhoseCommitIsLostIsSettledByTheServer(cut: CommitCuttingRelay.Cut) throws {
        let relayed = try Self.relayedStore()
        defer { relayed.relay.stop() }  // (and the scratch schema lives until then)
        let (direct, relay, store) = (relayed.direct, relayed.relay, relayed.store)
        var cuts = 0
        func losingItsCommit<T>(_ what: String, _ body: () throws -> T) throws -> T {
            relay.arm(cut)
            let result = try body()
            cuts += 1
            #expect(relay.cuts == cuts, "\(what): no COMMIT was cut")
            return result
        }

        try losingItsCommit("a collection") { try store.createCollection("gifts", schema: giftSchema) }
        try losingItsCommit("the first key") { try store.unlock(with: appSealer) }
        let id = try losingItsCommit("an add") { try store.add(["toWhom": "Alice", "description": "a kite"], to: "gifts") }
        let many = try losingItsCommit("a bulk add") {
            try store.add(contentsOf: (0..<300).map { ["toWhom": .string("B\($0)"), "description": "d"] }, to: "gifts")
        }
        try losingItsCommit("an update") { try store.update(id, setting: ["description": "a red kite"]) }
        try losingItsCommit("a delete") { try store.delete(many[0]) }
        let rotation = try losingItsCommit("a rotation's key switch") { try store.rotateStoreKey(with: appSealer) }

        let reader = try RecordStore(storage: direct, configuration: testConfiguration)
        try reader.unlock(with: appSealer)
        #expect(try reader.open(id).openedFields["description"] == "a red kite")
        #expect(try reader.search(in: "gifts").count == 300, "the add and 299 of the bulk add, each once")
        #expect(try direct.record(many[0]) == nil)
        #expect(rotation.keyId == 2 && rotation.resealed == 300)
        #expect(try direct.records(withKeyIdOtherThan: 2, after: 0, limit: 1).records.isEmpty)
        // No server process of the relay's connections is left in a transaction.
        let ports = relay.serverSidePorts.map(String.init).joined(separator: ",")
        let lingering = try direct.queryText(
            "SELECT count(*)::text FROM pg_stat_activity WHERE client_port IN (\(ports)) AND state LIKE 'idle in transaction%'")
        #expect(lingering == ["0"])
    }
}

extension LostCommitTests {
    /// A connection lost while the server's process is still working on the COMMIT (here a
    /// deferred trigger that takes 5 s, as a commit waiting for a synchronous standby would): the
    /// client asks until the server has settled it and never ends that process (before, it ended
    /// it after 0.5 s: the transaction was rolled back and run again, and with a synchronous
    /// standby a commit not yet confirmed would have been reported stored).
    @Test(.requires(.postgres))
    func aServerProcessWorkingOnTheCommitIsNotEnded() throws {
        let relayed = try Self.relayedStore()
        defer { relayed.relay.stop() }  // (and the scratch schema lives until then)
        let (direct, relay, store) = (relayed.direct, relayed.relay, relayed.store)
        try store.createCollection("gifts", schema: giftSchema)
        try store.unlock(with: appSealer)
        // Each run of the trigger takes a number from a sequence, which no rollback gives back.
        let (runs, slow) = (direct.tableName("commit_runs"), direct.tableName("slow_commit"))
        try direct.execute("CREATE SEQUENCE \(runs)")
        try direct.execute("""
            CREATE FUNCTION \(slow)() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM nextval('\(runs.replacingOccurrences(of: "'", with: "''"))'); PERFORM pg_sleep(5); RETURN NULL; END $$
            """)
        try direct.execute("""
            CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON \(direct.tableName("records"))
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION \(slow)()
            """)

        relay.arm(.requestPassedOn)
        let id = try store.add(["toWhom": "Alice", "description": "a kite"], to: "gifts")
        #expect(relay.cuts == 1, "no COMMIT was cut")
        #expect(try direct.queryText("SELECT last_value::text FROM \(runs)") == ["1"], "the transaction was ended and run again")
        #expect(try RecordStore(storage: direct, configuration: testConfiguration).search(in: "gifts").map(\.id) == [id])
    }
}

extension LostCommitTests {
    /// A statement that runs past `statement_timeout` on a live server ends with the server's
    /// typed cancellation (SQLSTATE 57014), at once and on the connection it ran on. The client
    /// waited exactly as long as the server: its own timer nearly always fired first, the
    /// connection was taken for lost, and the statement was run again on new connections until
    /// the transaction's deadline (here 20 s; about 20 runs).
    @Test(.requires(.postgres))
    func aStatementPastItsTimeoutGetsTheServersTypedError() throws {
        let relayed = try Self.relayedStore()
        defer { relayed.relay.stop() }  // (and the scratch schema lives until then)
        var configuration = Self.throughRelay(relayed.direct.configuration, relayed.relay)
        configuration.statementTimeoutSeconds = 1
        configuration.transactionTimeoutSeconds = 20
        let storage = try PostgresRecordStorage(configuration: configuration)
        defer { storage.close() }
        let connections = relayed.relay.serverSidePorts.count
        let started = Date()
        do {
            _ = try storage.queryText("SELECT pg_sleep(4)::text")
            Issue.record("a statement of 4 s ran under a statement_timeout of 1 s")
        } catch {
            guard case .storage(let failure) = error, case .server(let sqlState) = failure.cause else {
                Issue.record("not the server's error: \(error)")
                return
            }
            #expect(sqlState == "57014", "\(error)")
        }
        #expect(Date().timeIntervalSince(started) < 10, "the statement was run again until the transaction's deadline")
        #expect(relayed.relay.serverSidePorts.count <= connections + 1, "run on \(relayed.relay.serverSidePorts.count - connections) connections")
    }

    /// A pooled connection whose path goes silent (the relay drops its bytes both ways and keeps
    /// it open, as a NAT or a load balancer that forgot it would) is taken for lost at its first
    /// statement's deadline, and the transaction runs again on a new connection within its own
    /// deadline, a write and then a read. Before, each statement of the transaction's first round
    /// trip (three or four for a write) waited out a deadline of its own, which used up the
    /// transaction's: the call failed with connectionLost although the server was there.
    @Test(.requires(.postgres))
    func aPooledConnectionGoneSilentIsReplacedWithinTheDeadline() throws {
        let relayed = try Self.relayedStore()
        defer { relayed.relay.stop() }  // (and the scratch schema lives until then)
        var configuration = Self.throughRelay(relayed.direct.configuration, relayed.relay)
        configuration.statementTimeoutSeconds = 10  // a statement's deadline: 10 s and 2 s of grace
        configuration.transactionTimeoutSeconds = 35  // less than three statements' deadlines
        let store = try RecordStore(storage: try PostgresRecordStorage(configuration: configuration), configuration: testConfiguration)
        try store.createCollection("gifts", schema: giftSchema)
        try store.unlock(with: appSealer)
        let first = try store.add(["toWhom": "Alice", "description": "a kite"], to: "gifts")
        relayed.relay.silenceExistingConnections()
        let second = try store.add(["toWhom": "Bob", "description": "a drum"], to: "gifts")
        relayed.relay.silenceExistingConnections()
        #expect(try store.record(first).clearFields["toWhom"] == "Alice")
        let reader = try RecordStore(storage: relayed.direct, configuration: testConfiguration)
        try reader.unlock(with: appSealer)
        #expect(try reader.record(second).clearFields["toWhom"] == "Bob")
        #expect(try reader.search(in: "gifts").count == 2)
    }
}
