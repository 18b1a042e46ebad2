import SecureCore
/// Why a record storage backend failed, as values a caller can decide on (retry, reconnect,
/// check, report) rather than text to match.
public struct StorageFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Cause: Equatable, Sendable {
        /// The storage's configuration is not acceptable (a malformed URL, schema name or port);
        /// nothing was contacted.
        case invalidConfiguration
        /// The server could not be reached or refused the session (network, TLS, authentication).
        case cannotConnect
        /// The connection was lost or the server stopped answering during the operation (after
        /// the retries the storage makes itself); the server rolled back what it had not committed.
        case connectionLost
        /// The connection was lost after COMMIT was sent and before its answer, and whether the
        /// change was stored could not be learnt: PostgreSQL, asked on a new connection, did not
        /// say before the deadline, or restarted meanwhile (its answer may then be about another
        /// transaction) for a change that has no records of its own to look for. Check before
        /// repeating it.
        case outcomeUnknown
        /// The PostgreSQL server reported an error with this SQLSTATE (for example `40001`,
        /// `23505`, `42501`, `57014`).
        case server(sqlState: String)
        /// SQLite reported this extended result code (0: the file system failed before SQLite ran).
        case sqlite(code: Int32)
        /// The stored data is not what this library writes (a malformed or vanished row, an
        /// unexpected column type); the migration of such a store is refused.
        case malformedStorage
        /// Writing the output of an export failed.
        case export
    }

    /// The kind of failure.
    public let cause: Cause
    /// What failed and where, in words for a person (never a password or a stored value).
    public let message: String

    /// The SQLSTATE, when a PostgreSQL server reported the failure: the state of `.server`, and
    /// for a connection the server ended or refused for the time being (`connectionLost`,
    /// `cannotConnect`) the state it gave, such as `57P01` (shut down) or `57P03` (starting up).
    public let sqlState: String?

    /// A failure of kind `cause`, described by `message`, with the `sqlState` the server gave
    /// (for `.server`, always that case's own state).
    public init(_ cause: Cause, _ message: String, sqlState: String? = nil) {
        self.cause = cause
        self.message = message
        if case .server(let state) = cause {
            self.sqlState = state
        } else {
            self.sqlState = sqlState
        }
    }

    /// `message`, with control characters escaped: it may quote a server (`PrintableText`).
    public var description: String { PrintableText.escaped(message) }
}
