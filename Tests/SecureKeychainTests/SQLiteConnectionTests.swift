import Foundation
import SFTestSupport
import SQLiteSupport
import Testing

/// The SQLite wrapper both SecureKeychain and SecureRecords write through.
struct SQLiteConnectionTests {
    /// A query left on a row inside a transaction must not keep the connection's read snapshot
    /// after COMMIT: SQLite would then answer this connection's next write transaction with BUSY
    /// at once, without waiting, once another connection has written (two `sf records add`
    /// processes racing on a new store failed this way).
    @Test func aStatementLeftOnARowDoesNotBlockTheNextWriteAfterAnotherWriter() throws {
        let directory = try TestSupport.temporaryDirectory("sqlite-connection")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite").path
        let first = try SQLiteConnection.openDurable(path: path, busyTimeoutMilliseconds: 2_000)
        try first.execute("CREATE TABLE t (n INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2)")
        let second = try SQLiteConnection.openDurable(path: path, busyTimeoutMilliseconds: 2_000)

        let firstRow = try first.transaction(write: false) { () throws(SQLiteError) -> Int64 in
            let rows = try first.statement("SELECT n FROM t ORDER BY n")
            _ = try rows.step()
            return rows.int64(0)  // left on its first row
        }
        #expect(firstRow == 1)
        try second.transaction(write: true) { () throws(SQLiteError) in try second.execute("INSERT INTO t VALUES (3)") }
        try first.transaction(write: true) { () throws(SQLiteError) in try first.execute("INSERT INTO t VALUES (4)") }
        #expect(try second.integer("SELECT count(*) FROM t") == 4)
    }

    /// The same for a transaction that ends by an error (rolled back).
    @Test func aStatementLeftOnARowByAFailedTransactionDoesNotBlockTheNextWrite() throws {
        let directory = try TestSupport.temporaryDirectory("sqlite-connection")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite").path
        let first = try SQLiteConnection.openDurable(path: path, busyTimeoutMilliseconds: 2_000)
        try first.execute("CREATE TABLE t (n INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2)")
        let second = try SQLiteConnection.openDurable(path: path, busyTimeoutMilliseconds: 2_000)

        #expect(throws: SQLiteError.self) {
            try first.transaction(write: false) { () throws(SQLiteError) in
                _ = try first.statement("SELECT n FROM t ORDER BY n").step()
                throw SQLiteError(path: path, code: 1, message: "the caller gave up")
            }
        }
        try second.transaction(write: true) { () throws(SQLiteError) in try second.execute("INSERT INTO t VALUES (3)") }
        try first.transaction(write: true) { () throws(SQLiteError) in try first.execute("INSERT INTO t VALUES (4)") }
        #expect(try second.integer("SELECT count(*) FROM t") == 4)
    }
}
