import CSQLite
import Foundation

/// A thin wrapper over one SQLite connection: prepared statements (cached per SQL text),
/// transactions and a few pragmas. Not thread-safe: exactly one thread owns a connection at a time
/// (the keychain's writer thread, a record store's lock holder, or a short-lived caller).
/// Shared by SecureKeychain and SecureRecords; `package` visibility, never part of a public API.
package final class SQLiteConnection {
    /// The file this connection opened.
    package let path: String
    private let handle: OpaquePointer
    private var statements: [String: SQLiteStatement] = [:]

    /// Opens (creating when `create`) the database at `path`, with extended result codes and
    /// `busyTimeout` milliseconds of waiting on another connection's lock.
    package convenience init(path: String, create: Bool, busyTimeoutMilliseconds: Int32) throws(SQLiteError) {
        try self.init(
            opening: path, displayPath: path, flags: create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READWRITE,
            busyTimeoutMilliseconds: busyTimeoutMilliseconds)
    }

    private init(opening name: String, displayPath path: String, flags: Int32, busyTimeoutMilliseconds: Int32) throws(SQLiteError) {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(name, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(db)
            throw SQLiteError(path: path, code: rc, message: message)
        }
        self.path = path
        self.handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
    }

    /// Opens the existing database at `path` for reading only, for a file this process cannot write
    /// (a read-only file system, or a file or directory another user owns). A WAL database needs
    /// its `-shm` index to be read: when the `-wal` or `-shm` file exists it is opened read-only
    /// (`mode=ro`); when neither does, the file holds every committed transaction and no connection
    /// is writing it, so it is opened as immutable (no locks, no index).
    package convenience init(readingOnly path: String, busyTimeoutMilliseconds: Int32) throws(SQLiteError) {
        let hasLog = FileManager.default.fileExists(atPath: path + "-wal") || FileManager.default.fileExists(atPath: path + "-shm")
        let uri = "file:" + Self.uriEscaped(path) + (hasLog ? "?mode=ro" : "?immutable=1")
        try self.init(opening: uri, displayPath: path, flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
    }

    /// `path` with the characters a SQLite URI gives meaning to (`%`, `?`, `#`) percent-encoded.
    static func uriEscaped(_ path: String) -> String {
        var escaped = ""
        for character in path.unicodeScalars {
            switch character {
            case "%": escaped += "%25"
            case "?": escaped += "%3f"
            case "#": escaped += "%23"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// The rowid of the most recent successful insert on this connection.
    package var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE on this connection.
    package var changes: Int64 { Int64(sqlite3_changes(handle)) }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// The error for result code `code`, with SQLite's message for this connection.
    package func error(_ code: Int32) -> SQLiteError {
        SQLiteError(path: path, code: code, message: String(cString: sqlite3_errmsg(handle)))
    }

    /// A query that must return a row returned none: the file's structure is damaged (SQLite's
    /// own message at this point, "no more rows available", would mean nothing to a user).
    func missingRow() -> SQLiteError {
        SQLiteError(path: path, code: SQLITE_CORRUPT, message: "a row the database needs is missing (the file was modified or damaged)")
    }

    /// Runs one or more statements that return no rows of interest.
    package func execute(_ sql: String) throws(SQLiteError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc) }
    }

    /// The cached prepared statement for `sql`, reset and with its bindings cleared.
    package func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(rc) }
        let statement = SQLiteStatement(handle: raw, connection: self)
        statements[sql] = statement
        return statement
    }

    /// The first column of the first row of `sql` as an integer (for pragmas and counts).
    package func integer(_ sql: String) throws(SQLiteError) -> Int64 {
        let statement = try statement(sql)
        guard try statement.step() else { throw missingRow() }
        let value = statement.int64(0)
        statement.reset()
        return value
    }

    /// The first column of the first row of `sql` as text.
    package func text(_ sql: String) throws(SQLiteError) -> String {
        let statement = try statement(sql)
        guard try statement.step() else { throw missingRow() }
        let value = statement.text(0)
        statement.reset()
        return value
    }

    /// Changes committed to the file by any other connection (or process) since this connection's
    /// previous call make the value differ; this connection's own commits do not.
    package func dataVersion() throws(SQLiteError) -> Int64 {
        try integer("PRAGMA data_version")
    }

    /// Runs `body` in a transaction (`BEGIN IMMEDIATE` when `write`, so the write lock is taken up
    /// front and waits under the busy timeout), committing on success and rolling back on error.
    /// Every cached statement is reset before the transaction ends: a statement left on a row would
    /// otherwise keep this connection's read snapshot after COMMIT, and the next write transaction
    /// would get BUSY at once, without the busy handler (`SQLITE_BUSY_SNAPSHOT` when another
    /// connection has written since).
    package func transaction<R, E: Error>(
        write: Bool, mapError: (SQLiteError) -> E, _ body: () throws(E) -> R
    ) throws(E) -> R {
        do throws(SQLiteError) {
            try execute(write ? "BEGIN IMMEDIATE" : "BEGIN")
        } catch {
            throw mapError(error)
        }
        do throws(E) {
            let result = try body()
            resetStatements()
            do throws(SQLiteError) { try execute("COMMIT") } catch { throw mapError(error) }
            return result
        } catch {
            resetStatements()
            if sqlite3_get_autocommit(handle) == 0 { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
            throw error
        }
    }

    /// `transaction(write:mapError:_:)` for a body that throws `SQLiteError` itself.
    package func transaction<R>(write: Bool, _ body: () throws(SQLiteError) -> R) throws(SQLiteError) -> R {
        try transaction(write: write, mapError: { $0 }, body)
    }

    /// Ends every cached statement's run, releasing the snapshot a statement left on a row holds.
    private func resetStatements() {
        for statement in statements.values { statement.reset() }
    }
}

/// One prepared statement. Bind parameters are 1-based, columns 0-based (as in the C API).
package final class SQLiteStatement {
    private let handle: OpaquePointer
    private unowned let connection: SQLiteConnection

    /// SQLite copies bound values before the bind call returns.
    private static var transient: sqlite3_destructor_type { unsafeBitCast(-1, to: sqlite3_destructor_type.self) }

    init(handle: OpaquePointer, connection: SQLiteConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement for another run and clears its bindings.
    package func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Binds text (1-based index); SQLite copies the bytes. The other overloads bind blobs, NULL for nil, integers and reals.
    package func bind(_ index: Int32, _ value: String) {
        var value = value
        value.withUTF8 { bytes in
            if let base = bytes.baseAddress {
                base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    _ = sqlite3_bind_text(handle, index, $0, Int32(bytes.count), Self.transient)
                }
            } else {
                // An empty string has no buffer; a nil pointer would bind NULL instead of ''.
                _ = sqlite3_bind_text(handle, index, "", 0, Self.transient)
            }
        }
    }

    package func bind(_ index: Int32, _ value: Data) {
        value.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress, !bytes.isEmpty {
                _ = sqlite3_bind_blob(handle, index, base, Int32(bytes.count), Self.transient)
            } else {
                _ = sqlite3_bind_zeroblob(handle, index, 0)
            }
        }
    }

    package func bind(_ index: Int32, _ value: [UInt8]) {
        value.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress, !bytes.isEmpty {
                _ = sqlite3_bind_blob(handle, index, base, Int32(bytes.count), Self.transient)
            } else {
                _ = sqlite3_bind_zeroblob(handle, index, 0)
            }
        }
    }

    package func bind(_ index: Int32, _ value: String?) {
        if let value { bind(index, value) } else { sqlite3_bind_null(handle, index) }
    }

    package func bind(_ index: Int32, _ value: Data?) {
        if let value { bind(index, value) } else { sqlite3_bind_null(handle, index) }
    }

    package func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
    package func bind(_ index: Int32, _ value: Double) { sqlite3_bind_double(handle, index, value) }

    /// Advances: true when a row is available, false when the statement is done.
    @discardableResult
    package func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let rc:
            let error = connection.error(rc)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Column accessors of the current row (0-based): NULL test, integer, real, text, blob, bytes, optional text and blob.
    package func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    package func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    package func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    package func text(_ column: Int32) -> String {
        guard let bytes = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    package func blob(_ column: Int32) -> Data {
        guard let bytes = sqlite3_column_blob(handle, column) else { return Data() }
        return Data(bytes: bytes, count: Int(sqlite3_column_bytes(handle, column)))
    }

    package func bytes(_ column: Int32) -> [UInt8] {
        guard let bytes = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, column))))
    }

    package func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }
    package func optionalBlob(_ column: Int32) -> Data? { isNull(column) ? nil : blob(column) }
}
