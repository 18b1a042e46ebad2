import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import SecureCore
import SecureRecords

/// A pool of PostgreSQL connections used synchronously.
///
/// `RecordStorage` is synchronous, so each call waits for the server. The wait is
/// `EventLoopFuture.wait()` on postgres-nio's future API: the connections' I/O runs on SwiftNIO
/// event-loop threads (`MultiThreadedEventLoopGroup.singleton`), never on Swift concurrency's
/// cooperative pool. A caller blocked in `wait()` on a cooperative thread therefore cannot starve
/// the work it waits for (the async API would need a cooperative thread to finish, and with two
/// cores two blocked callers would deadlock). Each transaction leases one connection for its whole
/// run (`ConnectionPool`): up to `maximumConnections` transactions run at once, from as many
/// threads, and a caller beyond that waits for a connection within its transaction's deadline.
/// Must not be called from an event-loop thread (NIO traps).
///
/// No wait is without a deadline: connecting (TCP, TLS, startup and authentication) has
/// `connectTimeoutSeconds`, each statement `statementTimeoutSeconds`, and each transaction,
/// the wait for a connection and retries included, `transactionTimeoutSeconds` (for an import:
/// since its last statement). A wait that passes its deadline closes the
/// connection (the server then rolls back whatever was open) and fails. A transaction whose
/// connection was lost or stopped answering before its COMMIT was sent is run again on a new
/// connection while its deadline allows (the server may be restarting); one lost while committing
/// is settled by asking the server how that transaction ended (`CommitOutcome`).
final class PostgresSession: Sendable {
    /// The idle connections, and how many transactions hold one.
    private let pool: ConnectionPool
    let configuration: PostgresRecordStorage.Configuration
    private let logger = Logger(label: "SecureRecordsPostgres", factory: { _ in SwiftLogNoOpLogHandler() })
    /// Each open connection's server run (`CommitOutcome`), by connection id (ids are never
    /// reused in a process), from its first write transaction; forgotten when it is dropped or
    /// closed, and (for connections the pool discarded as closed) past twice `maximumConnections`
    /// entries the oldest go: a connection whose entry went learns it again with its next write.
    let serverRuns = Locked<[PostgresConnection.ID: CommitOutcome.ServerRun]>([:])
    private static let ids = Locked(0)
    /// Whether a connection was ever made (then a host name that stops resolving is retried).
    private let hasConnected = Locked(false)

    init(_ configuration: PostgresRecordStorage.Configuration) {
        self.configuration = configuration
        pool = ConnectionPool(size: configuration.maximumConnections)
    }

    deinit {
        for connection in pool.takeIdle() { Self.release(connection) }
    }

    /// Closes the idle connections (a later call reconnects; a connection in use is closed when its
    /// transaction ends only if the server or the client dropped it).
    func close() {
        let closings: [EventLoopFuture<Void>] = pool.takeIdle().map { connection in
            serverRuns.withLock { $0[connection.id] = nil }
            let closing: EventLoopFuture<Void> = connection.close()
            closing.whenComplete { _ in withExtendedLifetime(connection) {} }
            return closing
        }
        let deadline = NIODeadline.now() + .seconds(Int64(configuration.connectTimeoutSeconds))
        for closing in closings { _ = try? Self.wait(for: closing, until: deadline, doing: "closing") }
    }

    /// Closes `connection` without waiting (postgres-nio asserts a connection is closed before it
    /// is released: it keeps itself alive until then).
    static func release(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// The open connection, or a new one: connecting is retried (with a growing pause) while the
    /// server refuses connections, drops them, or says it is starting up or shutting down (a
    /// restart), until `deadline`; any other failure (authentication, TLS, a missing database)
    /// is final.
    private func connected(
        _ current: inout PostgresConnection?, until transactionDeadline: NIODeadline
    ) throws(RecordsError) -> PostgresConnection {
        if let current, !current.isClosed { return current }
        if let closed = current { serverRuns.withLock { $0[closed.id] = nil } }
        current = nil
        let deadline = min(transactionDeadline, .now() + .seconds(Int64(configuration.connectTimeoutSeconds)))
        var pause = TimeAmount.milliseconds(50)
        // What the last attempt that failed in time met: when a later attempt runs out of time, the
        // error names it too (a server dropping every connection answered each time).
        var answered: PostgresFailure?
        while true {
            do throws(PostgresFailure) {
                let connection = try connect(until: deadline)
                hasConnected.withLock { $0 = true }
                current = connection
                return connection
            } catch {
                // A name that does not resolve is final before the first connection, as in libpq; once
                // connected, it may be a server restarting (a container's name gone meanwhile).
                guard error.isConnectionLost, !error.isRefusalOfTheSession, !Self.isTLSFailure(error.error), !Self.isLoginRefusal(error.error),
                    Self.unresolvedHost(error.error) == nil || hasConnected.withLock({ $0 }), !(error.error is DeadlineExceeded),
                    NIODeadline.now() + pause < deadline
                else {
                    guard error.error is DeadlineExceeded, let answered,
                        case .storage(let earlier) = Self.map(answered.error, configuration: configuration, connecting: true)
                    else {
                        throw Self.map(error.error, configuration: configuration, connecting: true)
                    }
                    throw .storage(StorageFailure(earlier.cause, "\(earlier.message); then no answer before the connect deadline", sqlState: earlier.sqlState))
                }
                answered = error
                Thread.sleep(forTimeInterval: Double(pause.nanoseconds) / 1e9)
                pause = min(pause * 2, .seconds(1))
            }
        }
    }

    /// The TLS client configuration: the system's trust roots, or those of `caFile` alone; TLS 1.2
    /// at least, as libpq's `ssl_min_protocol_version` default (NIOSSL's own minimum is TLS 1.0).
    static func tlsConfiguration(caFile: String?, checkingHostName: Bool = true) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        if let caFile { configuration.trustRoots = .file(caFile) }
        if !checkingHostName { configuration.certificateVerification = .noHostnameVerification }
        return configuration
    }

    /// `Configuration.loopbackAddresses(ofHost:)`, looked up on a thread of its own and waited for
    /// until `deadline`: a DNS resolver that does not answer (glibc waits timeout × attempts ×
    /// servers, 10 s or more) must not hold a connection attempt past its deadline. A lookup still
    /// running then finishes on its thread, its answer unused; connects meanwhile wait for that
    /// same lookup rather than start one each, so a silent resolver costs one thread per host.
    private static func loopbackAddresses(of host: String, until deadline: NIODeadline) throws(PostgresFailure) -> [String]? {
        let lookup = lookups.withLock { running -> HostLookup in
            if let lookup = running[host] { return lookup }
            let started = HostLookup()
            running[host] = started
            Thread.detachNewThread {
                let addresses = PostgresRecordStorage.Configuration.loopbackAddresses(ofHost: host)
                Self.lookups.withLock { $0[host] = nil }
                started.finish(addresses)
            }
            return started
        }
        guard let addresses = lookup.wait(until: deadline) else {
            throw PostgresFailure(error: DeadlineExceeded(activity: "looking up \(host)", silent: "the DNS resolver"))
        }
        return addresses
    }

    /// The host lookups running, by host name.
    private static let lookups = Locked<[String: HostLookup]>([:])

    /// One lookup of a host name's loopback addresses, which any number of connects wait for.
    private final class HostLookup: Sendable {
        private let answer = Locked<[String]??>(nil)
        private let answered = DispatchGroup()

        init() { answered.enter() }

        func finish(_ addresses: [String]?) {
            answer.withLock { $0 = .some(addresses) }
            answered.leave()
        }

        /// The answer (itself nil when the host is not loopback); nil when none came by `deadline`.
        func wait(until deadline: NIODeadline) -> [String]?? {
            let wait = max(0, (deadline - .now()).nanoseconds)
            guard answered.wait(timeout: .now() + .nanoseconds(Int(wait))) == .success else { return nil }
            return answer.withLock { $0 }
        }
    }

    /// One attempt to connect, within `deadline`.
    private func connect(until deadline: NIODeadline) throws(PostgresFailure) -> PostgresConnection {
        let c = configuration
        let tls: PostgresConnection.Configuration.TLS
        // Automatic TLS is off only for an address that resolved to loopback, and then that very
        // address is the one connected to.
        let loopback = c.tls == .automatic ? try Self.loopbackAddresses(of: c.host, until: deadline) : nil
        var plain = false
        do {
            switch c.tls {
            case .automatic where loopback == nil: tls = .require(try NIOSSLContext(configuration: Self.tlsConfiguration(caFile: nil)))
            case .disabled, .automatic:
                tls = .disable
                plain = true
            case .required(let caFile): tls = .require(try NIOSSLContext(configuration: Self.tlsConfiguration(caFile: caFile)))
            case .verifyCA(let caFile):
                tls = .require(try NIOSSLContext(configuration: Self.tlsConfiguration(caFile: caFile, checkingHostName: false)))
            }
        } catch {
            throw PostgresFailure(error: RecordsError.storage(StorageFailure(.cannotConnect, "\(c.displayName): TLS setup failed: \(error)")))
        }
        let password = c.password.map { secret in secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
        let id = Self.ids.withLock { value -> Int in
            value += 1
            return value
        }
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        // The connection is made here, and handed to postgres-nio: without TLS, with the login
        // watched (`PasswordLoginGuard`, first in its pipeline); and in both cases so that the
        // messages of a `COPY` can be held (`CopyResponseHold`, reading from the first byte).
        // A name that resolved to several loopback addresses (`localhost`: often `::1`, then
        // `127.0.0.1`) is tried at each in turn, until one takes the connection.
        // Each step has what is left of the deadline.
        let watchesLogin = plain, requiresSCRAM = plain && !(password ?? "").isEmpty
        // The name a certificate is checked against (and sent as SNI), as postgres-nio does for a
        // connection it makes itself: the host as given, unless it is an IP address (NIOSSL then
        // checks the peer's address).
        let serverName = (try? SocketAddress(ipAddress: c.host, port: 0)) == nil ? c.host : nil
        @Sendable func remaining() -> TimeAmount { max(.milliseconds(1), deadline - .now()) }
        @Sendable func channel(at addresses: ArraySlice<String>) -> EventLoopFuture<any Channel> {
            ClientBootstrap(group: eventLoop)
                .connectTimeout(remaining())
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        if watchesLogin { try pipeline.addHandler(PasswordLoginGuard(requiresSCRAM: requiresSCRAM)) }
                        try CopyResponseHold.install(in: pipeline, tls: !watchesLogin)
                    }
                }
                .connect(host: addresses.first ?? c.host, port: c.port)
                .flatMapError { error in
                    addresses.count > 1 && deadline > .now()
                        ? channel(at: addresses.dropFirst()) : eventLoop.makeFailedFuture(ConnectFailure(underlying: error))
                }
        }
        let connecting = channel(at: ArraySlice(loopback ?? [c.host]))
            .flatMap { channel in
                var established = PostgresConnection.Configuration(
                    establishedChannel: channel, tls: tls, username: c.user, password: password, database: c.database ?? c.user)
                established.options.tlsServerName = serverName
                established.options.connectTimeout = remaining()
                return PostgresConnection.connect(on: channel.eventLoop, configuration: established, id: id, logger: self.logger)
                    .flatMapError { error in
                        channel.close(promise: nil)
                        return channel.eventLoop.makeFailedFuture(error)
                    }
            }

        do {
            return try Self.wait(for: connecting, until: deadline, doing: "connecting")
        } catch {
            // A connection that completes after its deadline is closed at once.
            connecting.whenSuccess { connection in
                let closing: EventLoopFuture<Void> = connection.close()
                closing.whenComplete { _ in withExtendedLifetime(connection) {} }
            }
            throw error
        }
    }

    /// The TCP connection could not be made (postgres-nio reports the
    /// same as its `connectionError`): like a refused connection, tried again until the deadline.
    struct ConnectFailure: Error, CustomStringConvertible {
        let underlying: any Error
        var description: String { "cannot connect: connectionError: \(underlying)" }
    }

    /// A statement waited on a connection that had closed.
    struct ConnectionClosed: Error, CustomStringConvertible {
        var description: String { "the connection to the server was lost" }
    }

    /// A wait that passed its deadline: what was being done, and the time it was given.
    struct DeadlineExceeded: Error, CustomStringConvertible {
        let activity: String
        /// The transaction's deadline (`transaction_timeout`) was the one passed, in milliseconds.
        var transactionTimeout: Int64?
        /// Who did not answer.
        var silent = "the server"
        var description: String {
            if let transactionTimeout {
                return "the transaction passed its deadline while \(activity) (transaction_timeout=\(transactionTimeout) ms; "
                    + "raise it in the URL for a longer transaction)"
            }
            return "no answer from \(silent) while \(activity) before the deadline (is it down, stopped or overloaded?)"
        }
    }

    /// The deadline of a transaction, retries included: fixed, or for a bulk transaction (an
    /// import) renewed by each statement that completes, so that it bounds the time without
    /// progress rather than the length of the work. A bulk load's sender renews it from its own
    /// thread while the caller's reads it, hence the lock.
    final class TransactionDeadline: Sendable {
        private let current: Locked<NIODeadline>
        let timeout: TimeAmount
        let renewed: Bool

        init(timeout: TimeAmount, renewed: Bool) {
            self.timeout = timeout
            self.renewed = renewed
            current = Locked(.now() + timeout)
        }

        /// When the transaction must end.
        var value: NIODeadline { current.withLock { $0 } }

        /// A statement completed.
        func progressed() {
            if renewed { current.withLock { $0 = .now() + timeout } }
        }
    }

    /// Waits for `future` until `deadline`; then fails with `DeadlineExceeded` (the operation
    /// itself goes on: the caller closes its connection).
    ///
    /// With `connection`, the wait also ends (`ConnectionClosed`) within a second of the connection
    /// closing: postgres-nio never answers a statement whose write reached a channel that had
    /// closed (the server ended the connection, say), so such a wait would otherwise last until its
    /// deadline. (A statement written before the close is failed by postgres-nio itself.)
    static func wait<Value: Sendable>(
        for future: EventLoopFuture<Value>, until deadline: NIODeadline, doing activity: String, transactionTimeout: Int64? = nil,
        on connection: PostgresConnection? = nil
    ) throws(PostgresFailure) -> Value {
        let bounded = future.eventLoop.makePromise(of: Value.self)
        future.cascade(to: bounded)
        let timer = future.eventLoop.scheduleTask(deadline: deadline) {
            bounded.fail(DeadlineExceeded(activity: activity, transactionTimeout: transactionTimeout))
        }
        defer { timer.cancel() }
        let watch = connection.map { connection in
            future.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
                if connection.isClosed { bounded.fail(ConnectionClosed()) }
            }
        }
        defer { watch?.cancel() }
        do {
            return try bounded.futureResult.wait()
        } catch {
            throw PostgresFailure(error: error)
        }
    }

    /// A `RecordsError.storage` naming the server and the cause (never a password or bound value),
    /// with the SQLSTATE as a value when the server reported one.
    static func map(_ error: any Error, configuration: PostgresRecordStorage.Configuration, connecting: Bool = false) -> RecordsError {
        if let error = error as? RecordsError { return error }
        let place = configuration.displayName
        if let unknown = unresolvedHost(error) {
            return .storage(StorageFailure(.cannotConnect, "\(place): cannot connect: the host name \(unknown.host) does not resolve "
                + "(\(unknown.errorDescription))"))
        }
        if let error = error as? DeadlineExceeded {
            return .storage(StorageFailure(connecting ? .cannotConnect : .connectionLost, "\(place): \(error)"))
        }
        guard let psql = error as? PSQLError else {
            return .storage(StorageFailure(connecting ? .cannotConnect : .connectionLost, "\(place): \(error)"))
        }
        if let info = psql.serverInfo, let state = info[.sqlState] {
            let message = info[.message] ?? "server error"
            let lost = isConnectionLost(psql) || (!connecting && endedTheSession(psql))
            let cause: StorageFailure.Cause = lost ? (connecting ? .cannotConnect : .connectionLost) : .server(sqlState: state)
            return .storage(StorageFailure(cause, "\(place): \(message) (SQLSTATE \(state))", sqlState: state))
        }
        var text = connecting ? "cannot connect: " : ""
        let lost = !connecting && isConnectionLost(psql)
        if lost {
            text += "the connection to the server was lost (\(psql.code))"
        } else if psql.code == .sslUnsupported {
            text += "the server does not offer TLS, which this connection requires (turn on ssl in the server's "
                + "postgresql.conf; or, only on a trusted private link, connect with sslmode=disable)"
        } else {
            text += String(describing: psql.code)
        }
        // postgres-nio's own errors describe themselves generically; name only foreign causes.
        if let underlying = psql.underlying, !(underlying is PSQLError) {
            text += ": \(underlying)"
            if isTLSFailure(psql) { text += tlsAdvice(configuration, hostName: isHostNameFailure(psql)) }
        }
        let cause: StorageFailure.Cause = connecting ? .cannotConnect : lost ? .connectionLost : .malformedStorage
        return .storage(StorageFailure(cause, "\(place): \(text)"))
    }

    /// What fixes a TLS handshake that failed, for the configuration that was used: a certificate
    /// that verified but does not name the host (`hostName`), or one that did not verify.
    static func tlsAdvice(_ configuration: PostgresRecordStorage.Configuration, hostName: Bool) -> String {
        let caFileGiven = switch configuration.tls {
        case .required(let caFile?), .verifyCA(let caFile?): !caFile.isEmpty
        default: false
        }
        if hostName {
            return " (the server's certificate does not name the host \(configuration.host): connect by a name or address "
                + "the certificate lists\(caFileGiven ? ", or, to trust that CA's certificates for any host, use sslmode=verify-ca" : ""))"
        }
        return switch configuration.tls {
        case .required(let caFile?), .verifyCA(let caFile?):
            " (the server's certificate does not verify against \(caFile): check that it is the CA that issued the server's certificate)"
        default:
            " (the server's certificate does not verify against the system's CAs: if it comes from your own CA, "
                + "name that CA with sslrootcert=PATH in the URL, or sf records --postgres-ca-file PATH)"
        }
    }

    /// Forgets the transaction's connection and closes it (it keeps itself alive until closed), at
    /// once or, while a `COPY` is sending its data, once the copy has ended (`CopyGuard`).
    private func drop(_ tx: Transaction, from current: inout PostgresConnection?) {
        if current === tx.connection { current = nil }
        serverRuns.withLock { $0[tx.connection.id] = nil }
        tx.copyGuard.close()
    }

    /// Whether `error` is a server error with SQLSTATE `state`.
    static func sqlState(of error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// A transaction's connection: runs statements and waits for them, each until the statement
    /// deadline (or the transaction's, if sooner). Records the last failure, so the transaction
    /// can decide on a retry by its SQLSTATE or kind, not by the text of the error.
    struct Transaction {
        let connection: PostgresConnection
        let logger: Logger
        let session: PostgresSession
        let deadline: TransactionDeadline
        let failures: FailureLog
        /// Holds a close of the connection while a `COPY` sends its data.
        let copyGuard: CopyGuard

        /// The statement's deadline, or the transaction's if sooner (then named in a failure). The
        /// client waits `statementGrace` longer than the server's own `statement_timeout`, so
        /// that a live server's cancellation (SQLSTATE 57014, a typed and final error) arrives
        /// first: with the same deadline the client's timer nearly always fired first, and a slow
        /// statement was taken for a lost connection and run again until the transaction's deadline.
        private var statementDeadline: (deadline: NIODeadline, transactionTimeout: Int64?) {
            let timeout = session.configuration.statementTimeoutSeconds
            let statement = NIODeadline.now() + .milliseconds(Int64((timeout + Self.statementGrace(timeout)) * 1000))
            return deadline.value < statement ? (deadline.value, deadline.timeout.nanoseconds / 1_000_000) : (statement, nil)
        }

        /// How much longer than the server's `statement_timeout` of `timeout` seconds the client
        /// waits for a statement: two seconds (so that the cancellation still arrives first
        /// across a loaded machine or a relay), or a tenth of it if more.
        static func statementGrace(_ timeout: Double) -> Double { max(2, timeout / 10) }

        /// The statement that gives the server the transaction's timeouts, sent with its BEGIN (in
        /// the same round trip), for this transaction alone (`set_config(name, value, true)`, as
        /// `SET LOCAL`). The server cancels a statement that runs past `statement_timeout` too
        /// (so a statement the client gave up on does not run on). A wait for a lock ends earlier,
        /// in the server (`lock_timeout`; SQLSTATE 55P03, a typed and final error), rather than
        /// racing the client's own statement deadline (which takes the connection for lost and
        /// runs the transaction again): 2 s earlier, or at half the statement deadline.
        /// Per transaction, not as startup parameters of the connection: a pooler such as
        /// PgBouncer refuses those ("unsupported startup parameter"), and one pooling by
        /// transaction runs each transaction on whichever server connection is free.
        var serverTimeouts: (String, PostgresBindings) {
            let statement = Int64(session.configuration.statementTimeoutSeconds * 1000)
            var binds = PostgresBindings()
            binds.append(String(statement))
            binds.append(String(max(1, statement / 2, statement - 2000)))
            return ("SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $2, true)", binds)
        }

        /// Runs `sql` with `binds` and returns every row.
        @discardableResult
        func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws(PostgresFailure) -> [PostgresRow] {
            try finish(connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)).rows
        }

        /// Starts `COPY "<schema>"."<table>" ("<column>", ...) FROM STDIN WITH (FORMAT binary)` for
        /// each copy whose rows are not empty, in order, sending its rows (`PostgresCopyRows`) in
        /// one message (a group is at most `PostgresRecordStorage.groupBytes`). They run as one task
        /// on the connection's event loop (`EventLoopTaskExecutor`); the call returns at once, and
        /// each copy's completion is waited for with `finish(_:)`, in order, before any other
        /// statement (`finish(_:)` of a `CopyInProgress`).
        func startCopy(_ copies: [(table: String, columns: [String], rows: ByteBuffer)]) -> CopyInProgress {
            let connection = self.connection, logger = self.logger, copyGuard = self.copyGuard
            let schema = session.configuration.schema
            let ends = copies.map { _ in connection.eventLoop.makePromise(of: Void.self) }
            Task(executorPreference: EventLoopTaskExecutor(connection.eventLoop)) {
                var index = 0
                do {
                    for (copyIndex, copy) in copies.enumerated() {
                        index = copyIndex
                        guard copy.rows.readableBytes > 0 else {
                            ends[copyIndex].succeed()
                            continue
                        }
                        // postgres-nio would never answer a copy started on a closed connection.
                        try await Self.ensureOpen(connection, copyGuard)
                        guard copyGuard.startSending() else { throw ConnectionClosed() }
                        defer { copyGuard.stopSending() }  // if copyFrom fails before it calls the closure
                        let target = Self.binaryCopyTarget(schema: schema, table: copy.table, columns: copy.columns)
                        try await connection.copyFrom(table: target, logger: logger) { writer in
                            // copyFrom ends the copy (CopyDone, or CopyFail if this throws) as this
                            // returns, in this same job: a close held meanwhile follows in a later one.
                            defer { copyGuard.stopSending() }
                            if let pause = CopyGuard.pauseWhileSending.withLock({ $0 }) { await pause(copyGuard) }
                            try await Self.ensureOpen(connection, copyGuard)
                            do {
                                // One message: the channel is writable as a copy starts (the server
                                // read the previous one), so the write never waits for room, a wait
                                // postgres-nio may never end once the copy fails.
                                try await writer.write(copy.rows)
                            } catch {
                                // A write failed by the connection's close: copyFrom's CopyFail must
                                // wait for the handler's removal too.
                                try await Self.ensureOpen(connection, copyGuard)
                                throw error
                            }
                            try await Self.ensureOpen(connection, copyGuard)
                        }
                        ends[copyIndex].succeed()
                    }
                } catch {
                    // This copy failed, and the ones after it are not run.
                    for end in ends[index...] { end.fail(error) }
                }
            }
            return CopyInProgress(statements: ends.map(\.futureResult), eventLoop: connection.eventLoop)
        }

        /// What to give postgres-nio's `copyFrom` as the table for a binary copy into `table` of
        /// `schema`. postgres-nio 1.33 builds only text-format copies, one line
        /// `COPY "<table>" FROM STDIN WITH (FORMAT text)` with the table inserted as given (as its
        /// documentation warns), so this closes the quote, qualifies the table, names the columns
        /// and the binary format, and turns the rest of that line into a comment (Package.swift
        /// accepts 1.33 only; another template fails every bulk-load test against a server, never
        /// silently).
        /// Schema, table and column names are the store's own plain identifiers
        /// (`Configuration.validate`), checked again here.
        static func binaryCopyTarget(schema: String, table: String, columns: [String]) -> String {
            precondition(([schema, table] + columns).allSatisfy(PostgresRecordStorage.Configuration.isPlainIdentifier), "not a plain identifier")
            let columnList = columns.map { "\"\($0)\"" }.joined(separator: ", ")
            return "\(schema)\".\"\(table)\" (\(columnList)) FROM STDIN WITH (FORMAT binary) --"
        }

        /// Returns, on the connection's event loop, while the connection is open; once it has
        /// closed, throws `ConnectionClosed` only after its handlers are gone. postgres-nio traps
        /// (a precondition) on a copy call (a message, the end, the failure of a copy) made after
        /// its state machine saw the close and before its handler was removed; once removed, those
        /// calls fail with an error. A close that is not ours (the server's, the network's) makes
        /// the channel inactive in the job in which postgres-nio's state machine sees it, so
        /// between jobs "open" means the copy may go on. Our own closes go through `copyGuard`,
        /// which holds them while a copy runs (with TLS the channel stays active after one,
        /// until the TLS shutdown ends): a close held by it ends the copy (with CopyFail, then
        /// the close).
        static func ensureOpen(_ connection: PostgresConnection, _ copyGuard: CopyGuard) async throws {
            if connection.isClosed {
                try? await connection.closeFuture.get()  // completes with the handlers' removal
                throw ConnectionClosed()
            }
            if copyGuard.isClosing { throw ConnectionClosed() }
        }

        /// Waits for each copy of `copying` in turn, each until its own statement deadline (as the
        /// server gives each its own `statement_timeout`); records a failure.
        func finish(_ copying: CopyInProgress) throws(PostgresFailure) {
            for statement in copying.statements { try finish(statement) }
        }

        /// Waits for a statement's `future` until the statement deadline (or the connection's
        /// close); records a failure.
        func finish<Value: Sendable>(_ future: EventLoopFuture<Value>) throws(PostgresFailure) -> Value {
            do throws(PostgresFailure) {
                let bound = statementDeadline
                let value = try PostgresSession.wait(
                    for: future, until: bound.deadline, doing: "running a statement", transactionTimeout: bound.transactionTimeout,
                    on: connection)
                deadline.progressed()
                return value
            } catch {
                throw failures.record(error)
            }
        }

        /// Sends every statement at once (postgres-nio queues them on the connection, so the server
        /// runs one while the next is encoded and sent), then waits for all; throws the first failure
        /// (later statements of a failed transaction fail too, and are drained first).
        func pipeline(_ statements: [(String, PostgresBindings)]) throws(PostgresFailure) -> [[PostgresRow]] {
            var rows: [[PostgresRow]] = []
            for result in pipelineResults(statements) { rows.append(try result.get()) }
            return rows
        }

        /// `pipeline`, with each statement's rows or failure (the first failure is recorded).
        /// Once the connection is taken for lost (it closed, or a statement ran past its deadline:
        /// a path gone silent), the statements after it fail with that failure at once instead of
        /// each waiting out a deadline of its own: the transaction is run again on a new
        /// connection, and the time is its deadline's.
        func pipelineResults(_ statements: [(String, PostgresBindings)]) -> [Result<[PostgresRow], PostgresFailure>] {
            let futures = statements.map { connection.query(PostgresQuery(unsafeSQL: $0.0, binds: $0.1), logger: logger) }
            var results: [Result<[PostgresRow], PostgresFailure>] = []
            var failed = false
            for future in futures {
                if failed, case .failure(let lost)? = results.last, lost.isConnectionLost {
                    results.append(.failure(lost))
                    continue
                }
                // The server runs them one after another: each has a statement's time from the
                // end of the one before (a batch sent in many groups is not one statement).
                let bound = statementDeadline
                do throws(PostgresFailure) {
                    results.append(.success(try PostgresSession.wait(
                        for: future, until: bound.deadline, doing: "running a statement", transactionTimeout: bound.transactionTimeout,
                        on: connection
                    ).rows))
                    if !failed { deadline.progressed() }
                } catch {
                    if !failed { _ = failures.record(error) }
                    failed = true
                    results.append(.failure(error))
                }
            }
            return results
        }

        /// Maps a failure to `RecordsError`.
        func map(_ failure: PostgresFailure) -> RecordsError { PostgresSession.map(failure.error, configuration: session.configuration) }
    }

    /// The last failure of a transaction's statements.
    final class FailureLog {
        private(set) var last: PostgresFailure?

        func record(_ failure: PostgresFailure) -> PostgresFailure {
            last = failure
            return failure
        }

        /// The transaction ends with its body's own error, whatever failure it met before: it is
        /// not run again. Its connection is dropped, not rolled back, if that failure was a lost
        /// or silent connection (a copy may still be under way on it).
        private(set) var abandoned = false
        func abandon() { abandoned = true }
    }

    /// A postgres-nio error, carried typed through transaction bodies.
    struct PostgresFailure: Error {
        let error: any Error
        var sqlState: String? { PostgresSession.sqlState(of: error) }

        /// Whether the connection itself is gone or stopped answering (as opposed to a statement
        /// failing): the server rolls back what it had not committed.
        var isConnectionLost: Bool {
            PostgresSession.isConnectionLost(error) || PostgresSession.endedTheSession(error) || error is DeadlineExceeded
                || error is ConnectionClosed || error is ConnectFailure
        }
        /// Whether the server refused to start the session for a reason of its own (a wrong
        /// password, a database that does not exist), not because it is shutting down: while
        /// connecting, a final answer rather than a lost connection.
        var isRefusalOfTheSession: Bool { PostgresSession.endedTheSession(error) && !PostgresSession.isConnectionLost(error) }
        /// Whether the server answered the statement alone with an error (severity ERROR): the
        /// session and its transaction are still there, so a COMMIT that met one did not commit.
        /// Any other failure of a COMMIT leaves its outcome unknown.
        var isStatementError: Bool {
            guard let info = (error as? PSQLError)?.serverInfo else { return false }
            return (info[.severity] ?? info[.localizedSeverity]) == "ERROR"
        }
        /// A serialization failure or deadlock: the transaction may simply be run again.
        var isTransient: Bool { sqlState == "40001" || sqlState == "40P01" }
    }

    /// Whether the TLS handshake was refused (a certificate that does not verify, or does not name
    /// the host; no protocol in common): postgres-nio reports it as a connection error, but every
    /// attempt would get the same answer, so it is final, as in libpq. A connection closed during
    /// the handshake (a server restarting), which NIOSSL reports as a failed handshake too, is not
    /// this, and is retried.
    static func isTLSFailure(_ error: any Error) -> Bool {
        guard let psql = error as? PSQLError else { return false }
        // Host-name checks (one that fails, or a name no certificate could match).
        if psql.underlying is NIOSSLExtraError { return true }
        switch psql.underlying as? NIOSSLError {
        case .handshakeFailed(.sslError(let stack))?:
            return !stack.contains(.eofDuringHandshake) && !stack.contains(.eofDuringAdditionalCertficiateChainValidation)
        case .noCertificateToValidate?:
            return true
        default:
            return false
        }
    }

    /// The resolver's answer when it says the host name does not resolve (no such name, no
    /// address for it, a non-recoverable failure), as opposed to a failure of the lookup itself
    /// (`EAI_AGAIN`, `EAI_SYSTEM`, `EAI_MEMORY`: the resolver or the process, for the time being).
    static func unresolvedHost(_ error: any Error) -> SocketAddressError.UnknownHost? {
        let underlying = (error as? ConnectFailure)?.underlying ?? (error as? PSQLError)?.underlying
        guard let connecting = underlying as? NIOConnectionError else { return nil }
        for case let unknown as SocketAddressError.UnknownHost in [connecting.dnsAError, connecting.dnsAAAAError]
        where answersForTheName.contains(unknown.errorCode) {
            return unknown
        }
        return nil
    }

    /// getaddrinfo's codes that are an answer about the name: `EAI_NONAME`, `EAI_FAIL`, and glibc's
    /// `EAI_NODATA` (-5) and `EAI_ADDRFAMILY` (-9), GNU extensions named here by value.
    private static let answersForTheName: Set<Int> = {
        var codes: Set<Int> = [Int(EAI_NONAME), Int(EAI_FAIL)]
        #if canImport(Glibc)
        codes.formUnion([-5, -9])
        #endif
        return codes
    }()

    /// Whether the login was refused for asking for the password in a way that reveals it, or
    /// for more SCRAM work than the client does (`PasswordLoginGuard`): final, as the same server
    /// asks the same each time.
    static func isLoginRefusal(_ error: any Error) -> Bool {
        let underlying = (error as? PSQLError)?.underlying
        return underlying is PasswordLoginGuard.Refused || underlying is PasswordLoginGuard.ExcessiveSCRAMCost
    }

    /// Whether a refused handshake was the host-name check (the certificate verified otherwise).
    static func isHostNameFailure(_ error: any Error) -> Bool {
        (error as? PSQLError)?.underlying is NIOSSLExtraError
    }

    /// Whether a server error ended the session, not only a statement: severity FATAL or PANIC (an
    /// idle-in-transaction timeout, a failed write of the server's log, or a pooler such as
    /// PgBouncer that lost its connection to the server: FATAL 08P01 "server conn crashed?").
    /// Inside a transaction it means what a lost connection means: what was not committed is
    /// rolled back, and a COMMIT's outcome is unknown. (An error of severity ERROR leaves the
    /// session, whatever its SQLSTATE: PostgreSQL's own 08P01 for a malformed message is one.)
    static func endedTheSession(_ error: any Error) -> Bool {
        guard let info = (error as? PSQLError)?.serverInfo else { return false }
        let severity = info[.severity] ?? info[.localizedSeverity]
        return severity == "FATAL" || severity == "PANIC"
    }

    /// Whether the connection is gone: closed, broken, or ended by the server shutting down or
    /// restarting (SQLSTATE class 57P: admin_shutdown, crash_shutdown, cannot_connect_now).
    static func isConnectionLost(_ error: any Error) -> Bool {
        // postgres-nio's COPY reports a closed connection with its older error type.
        if case .connectionClosed? = error as? PostgresError { return true }
        guard let psql = error as? PSQLError else { return false }
        if let state = psql.serverInfo?[.sqlState] { return ["57P01", "57P02", "57P03"].contains(state) }
        return [PSQLError.Code.serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown].contains(psql.code)
    }

    /// Runs `body` in one transaction (`BEGIN` ... `COMMIT`, `ROLLBACK` on any error), holding the
    /// connection. Read-only transactions run at REPEATABLE READ (one snapshot for every statement);
    /// writes at READ COMMITTED with unique constraints, `ON CONFLICT` and row locks doing the
    /// arbitration. A serialization failure or deadlock is retried (up to 5 times); a connection
    /// lost or silent before COMMIT was sent is replaced and the transaction run again, until the
    /// transaction deadline. A write transaction learns its transaction id with its BEGIN (in the
    /// same round trip, with its server process; the first on a connection also the server's run), so that a connection lost while committing is settled
    /// on a new connection by the server's own record of the outcome (`CommitOutcome`): committed,
    /// the result is returned; rolled back, the transaction is run again. After a server restart
    /// a committed id may be another transaction's (`CommitOutcome.Settled.committedOrReused`):
    /// then `wasCommitted` (a read that tells, say, whether records with the client's ids exist)
    /// decides. If the outcome cannot be learnt within the deadline, or there is no
    /// `wasCommitted` to decide it, the failure says the outcome is unknown. `body` may run more than once,
    /// so it must only read and write through `Transaction`. A `bulk` transaction (an import, whose
    /// length grows with its input) has its deadline renewed by each statement that completes:
    /// it bounds the time without progress, not the whole run; its retries after a lost connection
    /// are bounded by the deadline as it stood at the first loss. With `commitIf`, a result it
    /// refuses is returned after a ROLLBACK instead of a COMMIT.
    func transaction<R>(
        readOnly: Bool, bulk: Bool = false, commitIf: ((R) -> Bool)? = nil,
        wasCommitted: ((Transaction) throws(RecordsError) -> Bool)? = nil, _ body: (Transaction) throws(RecordsError) -> R
    ) throws(RecordsError) -> R {
        let deadline = TransactionDeadline(timeout: .milliseconds(Int64(configuration.transactionTimeoutSeconds * 1000)), renewed: bulk)
        var current: PostgresConnection?
        do {
            current = try pool.lease(until: deadline.value)
        } catch {
            throw Self.map(
                DeadlineExceeded(
                    activity: "waiting for one of the \(configuration.maximumConnections) pooled connections",
                    transactionTimeout: deadline.timeout.nanoseconds / 1_000_000),
                configuration: configuration)
        }
        defer { pool.giveBack(current) }
        var transientRetries = 0
        var pause = TimeAmount.milliseconds(50)
        // The body's result whose COMMIT was sent when the connection was lost, and the
        // transaction that COMMIT ended.
        var unconfirmed: (result: R, transaction: CommitOutcome.Transaction)?
        // Whatever ends the run while a COMMIT's outcome is unknown says so.
        func unknownOutcome(_ error: RecordsError) -> RecordsError {
            .storage(StorageFailure(
                .outcomeUnknown,
                "\(configuration.displayName): the connection was lost while committing, so whether the change "
                    + "was stored is unknown (\(error)); check before repeating it"))
        }
        // Reconnecting and running again after a lost connection is bounded by the deadline as
        // it stood at the first loss: a bulk transaction's renewals (its BEGIN on the new
        // connection is progress too) never extend it, so a failure that recurs cannot make
        // an import start over forever.
        var retriesUntil = NIODeadline.distantFuture
        while true {
            let connection: PostgresConnection
            do throws(RecordsError) {
                connection = try connected(&current, until: min(deadline.value, retriesUntil))
            } catch {
                throw unconfirmed == nil ? error : unknownOutcome(error)
            }
            let tx = Transaction(
                connection: connection, logger: logger, session: self, deadline: deadline, failures: FailureLog(),
                copyGuard: CopyGuard(connection))
            var committing: CommitOutcome.Transaction?
            var result: R?
            do throws(RecordsError) {
                if let pending = unconfirmed {
                    switch try CommitOutcome.settle(pending.transaction, tx, until: min(deadline.value, retriesUntil)) {
                    case .committed:
                        return pending.result
                    case .rolledBack:
                        unconfirmed = nil
                        continue
                    case .committedOrReused:
                        // Committed, whichever transaction it was: if this one, its writes are
                        // visible now; if another given its id after a crash, this one's process
                        // died with it. Either way its own writes, read now, are final.
                        guard let wasCommitted else {
                            throw RecordsError.storage(StorageFailure(
                                .outcomeUnknown, "the server restarted, and the transaction's id may have been given to another since"))
                        }
                        if try wasCommitted(tx) { return pending.result }
                        unconfirmed = nil
                        continue
                    }
                }
                let begun: CommitOutcome.Transaction?
                do throws(PostgresFailure) {
                    if readOnly {
                        _ = try tx.pipeline([("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", PostgresBindings()), tx.serverTimeouts])
                        begun = nil
                    } else {
                        begun = try CommitOutcome.begin(tx)
                    }
                } catch {
                    throw tx.map(error)
                }
                result = try body(tx)
                if let commitIf, !commitIf(result!) {
                    // Its writes are not kept; a connection lost or silent, or that cannot roll
                    // back, is dropped (the server rolls back what it held).
                    if tx.failures.last?.isConnectionLost == true || (try? tx.query("ROLLBACK")) == nil { drop(tx, from: &current) }
                    return result!
                }
                committing = begun
                do throws(PostgresFailure) { try tx.query("COMMIT") } catch { throw tx.map(error) }
                return result!
            } catch {
                let failure = tx.failures.last
                if tx.failures.abandoned {
                    if failure?.isConnectionLost == true || (try? tx.query("ROLLBACK")) == nil { drop(tx, from: &current) }
                    throw error
                }
                // A COMMIT that failed otherwise than with a statement's error may have committed;
                // so may one answered with an error of class 08 (connection exception, which
                // PostgreSQL never gives a COMMIT: a pooler relaying its lost server link, whose
                // ROLLBACK may then reach another server session and succeed there).
                var commitUnanswered = committing != nil && failure.map { !$0.isStatementError || $0.sqlState?.hasPrefix("08") == true } ?? true
                // Any other statement's error means it did not commit, if the session is still
                // there to roll back: an ERROR followed by the end of the connection leaves the
                // outcome unknown too. (A ROLLBACK that only ran out of time changes nothing: the
                // COMMIT's answer stands.)
                var rolledBack = false
                if committing != nil, !commitUnanswered, failure?.isConnectionLost != true {
                    if (try? tx.query("ROLLBACK")) != nil {
                        rolledBack = true
                    } else if !(tx.failures.last?.error is DeadlineExceeded) {
                        commitUnanswered = true
                    }
                }
                // PostgreSQL never answers a COMMIT that committed with an error, but a proxy in
                // between may (a serialization failure, say, which would have the body run again):
                // the server's record of the transaction decides, one round trip on this path only.
                // If it cannot be asked, the COMMIT's error stands, and a connection found lost
                // asking is not used again.
                if rolledBack, let committing, let result {
                    do throws(RecordsError) {
                        if case .committed = try CommitOutcome.settle(committing, tx, until: min(deadline.value, retriesUntil)) {
                            return result
                        }
                    } catch {
                        if tx.failures.last?.isConnectionLost == true { drop(tx, from: &current) }
                    }
                }
                if failure?.isConnectionLost == true || commitUnanswered {
                    drop(tx, from: &current)
                    retriesUntil = min(retriesUntil, deadline.value)
                    if let committing, let result { unconfirmed = (result, committing) }
                    if NIODeadline.now() + pause < min(deadline.value, retriesUntil) {
                        Thread.sleep(forTimeInterval: Double(pause.nanoseconds) / 1e9)
                        pause = min(pause * 2, .seconds(1))
                        continue
                    }
                    throw unconfirmed == nil ? error : unknownOutcome(error)
                }
                if unconfirmed != nil {
                    drop(tx, from: &current)
                    throw unknownOutcome(error)
                }
                // A connection that cannot even roll back is not given back to the pool.
                if !rolledBack, (try? tx.query("ROLLBACK")) == nil { drop(tx, from: &current) }
                if failure?.isTransient == true, transientRetries < 4 {
                    transientRetries += 1
                    continue
                }
                throw error
            }
        }
    }
}

/// The copies `Transaction.startCopy` started, one `COPY` statement after another: each one's
/// completion, in order (a failure fails the ones after it too, which are then not run).
struct CopyInProgress: Sendable {
    let statements: [EventLoopFuture<Void>]
    let eventLoop: any EventLoop

    /// Completes when every copy has ended, in success or failure.
    var ended: EventLoopFuture<Void> { statements.last ?? eventLoop.makeSucceededVoidFuture() }
}

/// Runs a task's jobs on one event loop. The task of a `COPY` (postgres-nio offers it only as an
/// `async` call) runs on its connection's event loop: it hands messages to postgres-nio in the same
/// job as it checks that the connection is open (`Transaction.ensureOpen`), and it never runs on
/// Swift concurrency's cooperative pool, which a synchronous caller waiting for it may be holding
/// (with two cores, two such callers would leave no thread to run the work they wait for). The
/// jobs only hand already encoded messages to the connection.
final class EventLoopTaskExecutor: TaskExecutor {
    private let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// The closes of a transaction's connection, made safe for its `COPY`s. postgres-nio traps (a
/// precondition) when a connection is closed while a copy sends its data, between the server's
/// CopyInResponse and the client's CopyDone or CopyFail. So from the moment a copy is started
/// until its data has ended, a close is held, and done once the copy task has ended the data; the
/// task, seeing the close asked for, ends its copy with CopyFail and starts no other. The hold
/// starts before the copy's statement is sent, not when the task gets the server's start: the
/// CopyInResponse puts the state machine in copy mode in one job and resumes the task in a later
/// one, and a close run between them traps. So a server that never answers the copy's start (it
/// accepted the connection, then stopped) keeps the connection and the task until it answers or
/// the server's own statement_timeout ends the copy (the call itself ends at its deadline). Its
/// state is read and written on the connection's event loop only (hence unchecked).
final class CopyGuard: @unchecked Sendable {
    private enum State { case idle, sending, closeHeld, closed }
    /// For tests: awaited by every copy task, with its guard, as it starts sending a copy's data
    /// (nil: no pause), so that a test can close a connection in that state.
    package static let pauseWhileSending = Locked<(@Sendable (CopyGuard) async -> Void)?>(nil)
    private let connection: PostgresConnection
    private var state = State.idle

    init(_ connection: PostgresConnection) {
        self.connection = connection
    }

    /// Whether a close was asked for: the copy task stops. On the event loop.
    var isClosing: Bool {
        connection.eventLoop.preconditionInEventLoop()
        return state == .closeHeld || state == .closed
    }

    /// A copy starts (its statement is about to be sent); false, changing nothing, once a close
    /// was asked for (the copy must not start). On the event loop.
    func startSending() -> Bool {
        connection.eventLoop.preconditionInEventLoop()
        guard state == .idle else { return false }
        state = .sending
        return true
    }

    /// The copy's data ends in this job (or the copy failed before it began); a close held
    /// meanwhile is done in a later job. On the event loop.
    func stopSending() {
        connection.eventLoop.preconditionInEventLoop()
        switch state {
        case .sending:
            state = .idle
        case .closeHeld:
            state = .closed
            connection.eventLoop.execute { PostgresSession.release(self.connection) }
        case .idle, .closed:
            break
        }
    }

    /// Closes the connection: at once, or once the copy in flight has ended its data.
    func close() {
        connection.eventLoop.execute {
            switch self.state {
            case .idle:
                self.state = .closed
                PostgresSession.release(self.connection)
            case .sending:
                self.state = .closeHeld
            case .closeHeld, .closed:
                break
            }
        }
    }
}
