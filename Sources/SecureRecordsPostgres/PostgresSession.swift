import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import SecureCore
import SecureRecords

/// One PostgreSQL connection used synchronously.
///
/// `RecordStorage` is synchronous, so each call waits for the server. The wait is
/// `EventLoopFuture.wait()` on postgres-nio's future API: the connection's I/O runs on a SwiftNIO
/// event-loop thread (`MultiThreadedEventLoopGroup.singleton`), never on Swift concurrency's
/// cooperative pool. A caller blocked in `wait()` on a cooperative thread therefore cannot starve
/// the work it waits for (the async API would need a cooperative thread to finish, and with two
/// cores two blocked callers would deadlock). Calls are serialised by a lock: one transaction at a
/// time per connection. Must not be called from an event-loop thread (NIO traps).
final class PostgresSession: @unchecked Sendable {
    private let lock = NSLock()
    private var connection: PostgresConnection?
    let configuration: PostgresRecordStorage.Configuration
    private let logger = Logger(label: "SecureRecordsPostgres", factory: { _ in SwiftLogNoOpLogHandler() })
    private static let ids = Locked(0)

    init(_ configuration: PostgresRecordStorage.Configuration) {
        self.configuration = configuration
    }

    deinit {
        // postgres-nio asserts a connection is closed before it is released: keep it until then.
        guard let connection else { return }
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Closes the connection (a later call reconnects).
    func close() {
        lock.withLock {
            if let connection {
                let closing: EventLoopFuture<Void> = connection.close()
                try? closing.wait()
            }
            connection = nil
        }
    }

    private func connected() throws(RecordsError) -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        connection = nil
        let c = configuration
        let tls: PostgresConnection.Configuration.TLS
        // Automatic TLS is off only for an address that resolved to loopback, and then that very
        // address is the one connected to.
        let loopback = c.tls == .automatic ? c.loopbackAddress : nil
        do {
            switch c.tls {
            case .disabled: tls = .disable
            case .automatic where loopback != nil: tls = .disable
            case .automatic: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .required(let caFile):
                var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
                if let caFile { tlsConfiguration.trustRoots = .file(caFile) }
                tls = .require(try NIOSSLContext(configuration: tlsConfiguration))
            }
        } catch {
            throw .storage("\(c.displayName): TLS setup failed: \(error)")
        }
        var password: String?
        if let secret = c.password { password = secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
        var pgConfiguration = PostgresConnection.Configuration(
            host: loopback ?? c.host, port: c.port, username: c.user, password: password, database: c.database ?? c.user, tls: tls)
        password = nil
        pgConfiguration.options.connectTimeout = .seconds(Int64(c.connectTimeoutSeconds))
        // No explicit TLS server name: postgres-nio sends the host as SNI unless it is an IP address,
        // and NIOSSL then checks the certificate against the host name or the peer's IP address.
        let id = Self.ids.withLock { value -> Int in
            value += 1
            return value
        }
        do {
            let connection = try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(), configuration: pgConfiguration, id: id, logger: logger
            ).wait()
            self.connection = connection
            return connection
        } catch {
            throw Self.map(error, configuration: c, connecting: true)
        }
    }

    /// A `RecordsError.storage` naming the server and the cause (never a password or bound value).
    static func map(_ error: any Error, configuration: PostgresRecordStorage.Configuration, connecting: Bool = false) -> RecordsError {
        if let error = error as? RecordsError { return error }
        let place = configuration.displayName
        guard let psql = error as? PSQLError else { return .storage("\(place): \(error)") }
        if let info = psql.serverInfo {
            let state = info[.sqlState] ?? "?"
            let message = info[.message] ?? "server error"
            return .storage("\(place): \(message) (SQLSTATE \(state))")
        }
        var text = connecting ? "cannot connect: " : ""
        if !connecting, isConnectionLost(psql) {
            text += "the connection to the server was lost (\(psql.code))"
        } else {
            text += String(describing: psql.code)
        }
        // postgres-nio's own errors describe themselves generically; name only foreign causes.
        if let underlying = psql.underlying, !(underlying is PSQLError) {
            text += ": \(underlying)"
            if underlying is NIOSSLError { text += tlsAdvice(configuration) }
        }
        return .storage("\(place): \(text)")
    }

    /// What fixes a TLS handshake that failed, for the configuration that was used.
    static func tlsAdvice(_ configuration: PostgresRecordStorage.Configuration) -> String {
        switch configuration.tls {
        case .required(let caFile?):
            " (the server's certificate does not verify against \(caFile), or does not name the host "
                + "\(configuration.host): check the CA file and connect by a name or address the certificate lists)"
        default:
            " (the server's certificate does not verify against the system's CAs: if it comes from your own CA, "
                + "name that CA with sslrootcert=PATH in the URL, or sf records --postgres-ca-file PATH)"
        }
    }

    /// Forgets `connection` (closing it; it keeps itself alive until closed).
    private func drop(_ connection: PostgresConnection) {
        if self.connection === connection { self.connection = nil }
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Whether `error` is a server error with SQLSTATE `state`.
    static func sqlState(of error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// A transaction's connection: runs statements and waits for them.
    struct Transaction {
        let connection: PostgresConnection
        let logger: Logger
        let session: PostgresSession

        /// Runs `sql` with `binds` and returns every row.
        @discardableResult
        func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws(PostgresFailure) -> [PostgresRow] {
            do {
                return try connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).wait().rows
            } catch {
                throw PostgresFailure(error: error)
            }
        }

        /// Sends every statement at once (postgres-nio queues them on the connection, so the server
        /// runs one while the next is encoded and sent), then waits for all; throws the first failure
        /// (later statements of a failed transaction fail too, and are drained first).
        func pipeline(_ statements: [(String, PostgresBindings)]) throws(PostgresFailure) -> [[PostgresRow]] {
            let futures = statements.map { connection.query(PostgresQuery(unsafeSQL: $0.0, binds: $0.1), logger: logger) }
            var results: [[PostgresRow]] = []
            var failure: PostgresFailure?
            for future in futures {
                do {
                    results.append(try future.wait().rows)
                } catch {
                    if failure == nil { failure = PostgresFailure(error: error) }
                    results.append([])
                }
            }
            if let failure { throw failure }
            return results
        }

        /// Maps a failure to `RecordsError`.
        func map(_ failure: PostgresFailure) -> RecordsError { PostgresSession.map(failure.error, configuration: session.configuration) }
    }

    /// A postgres-nio error, carried typed through transaction bodies.
    struct PostgresFailure: Error {
        let error: any Error
        var sqlState: String? { PostgresSession.sqlState(of: error) }

        /// Whether the connection itself is gone (as opposed to a statement failing).
        var isConnectionLost: Bool { PostgresSession.isConnectionLost(error) }
    }

    static func isConnectionLost(_ error: any Error) -> Bool {
        guard let psql = error as? PSQLError else { return false }
        return [PSQLError.Code.serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown].contains(psql.code)
    }

    /// Runs `body` in one transaction (`BEGIN` ... `COMMIT`, `ROLLBACK` on any error), holding the
    /// connection. Read-only transactions run at REPEATABLE READ (one snapshot for every statement);
    /// writes at READ COMMITTED with unique constraints, `ON CONFLICT` and row locks doing the
    /// arbitration. A serialization failure or deadlock is retried (up to 5 times).
    func transaction<R>(readOnly: Bool, _ body: (Transaction) throws(RecordsError) -> R) throws(RecordsError) -> R {
        try lock.locked { () throws(RecordsError) -> R in
            var attempt = 0
            var reconnected = false
            while true {
                attempt += 1
                let connection = try connected()
                let tx = Transaction(connection: connection, logger: logger, session: self)
                do throws(PostgresFailure) {
                    try tx.query(readOnly ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN ISOLATION LEVEL READ COMMITTED")
                } catch {
                    // A connection the server dropped while idle (restart, idle timeout, terminated
                    // backend): nothing ran yet, so reconnect once and start again.
                    if !reconnected, error.isConnectionLost {
                        reconnected = true
                        drop(connection)
                        continue
                    }
                    throw tx.map(error)
                }
                do throws(RecordsError) {
                    let result = try body(tx)
                    do throws(PostgresFailure) { try tx.query("COMMIT") } catch { throw tx.map(error) }
                    return result
                } catch {
                    _ = try? tx.query("ROLLBACK")
                    if attempt < 5, case .storage(let text) = error, text.contains("SQLSTATE 40001") || text.contains("SQLSTATE 40P01") {
                        continue
                    }
                    throw error
                }
            }
        }
    }
}

extension NSLock {
    func locked<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
