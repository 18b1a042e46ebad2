import CSQLite

/// A failure reported by SQLite (or by preparing a database file). Modules that use
/// `SQLiteConnection` map it to their own public error; it never appears in a public API.
package struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The database file concerned.
    package let path: String
    /// SQLite's extended result code, or 0 for a file-system failure before SQLite ran.
    package let code: Int32
    /// SQLite's (or the file system's) message.
    package let message: String

    /// An error for `path` with SQLite result `code` (0 for a file-system failure) and `message`.
    package init(path: String, code: Int32, message: String) {
        self.path = path
        self.code = code
        self.message = message
    }

    /// Another connection held the lock beyond the busy timeout (`SQLITE_BUSY`, any extended code).
    package var isBusy: Bool { code & 0xFF == SQLITE_BUSY }

    /// A uniqueness or other constraint failed (`SQLITE_CONSTRAINT`, any extended code).
    package var isConstraint: Bool { code & 0xFF == SQLITE_CONSTRAINT }

    /// The file is damaged (`SQLITE_CORRUPT`, any extended code, or a row a query needs is missing).
    package var isCorruption: Bool { code & 0xFF == SQLITE_CORRUPT }

    package var description: String { "\(path): SQLite error \(code): \(message)" }
}
