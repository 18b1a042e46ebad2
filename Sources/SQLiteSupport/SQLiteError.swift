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

    /// What went wrong, as a sentence for a person: the cause in words, without SQLite's result
    /// codes (the structured `code` stays available to programs).
    package var reason: String {
        switch code & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED: "another process held the database lock too long (database is locked)"
        case SQLITE_FULL: "the disk is full"
        case SQLITE_READONLY: "the database cannot be written (read-only file or file system)"
        case SQLITE_CANTOPEN: "the database file cannot be opened"
        case SQLITE_PERM, SQLITE_AUTH: "permission denied"
        case SQLITE_IOERR: "an input/output error occurred (\(message))"
        case SQLITE_NOTADB: "the file is not a database"
        case SQLITE_CORRUPT: "the database file is damaged (\(message))"
        case SQLITE_NOMEM: "out of memory"
        case SQLITE_CONSTRAINT: "a uniqueness constraint failed (\(message))"
        default: message
        }
    }

    package var description: String { "\(path): \(reason)" }
}
