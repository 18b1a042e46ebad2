#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

extension SQLiteConnection {
    /// Creates the parent directory (0700) when missing and the file (0600) when missing, so SQLite
    /// (which gives its -wal and -shm files the database's mode) never creates a wider file. A path
    /// that is not a regular file (a device, a FIFO, a directory) is refused before SQLite sees it:
    /// SQLite would create `PATH-journal` or `PATH-wal` beside it. Failures carry code 0 (a
    /// file-system failure, not SQLite's).
    package static func preparePrivateFile(_ path: String) throws(SQLiteError) {
        try createPrivateDirectory(containing: path)
        // O_NONBLOCK: opening a FIFO must not wait for a writer before it can be refused.
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            throw SQLiteError(path: path, code: 0, message: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw SQLiteError(path: path, code: 0, message: "\(path) is not a regular file")
        }
    }

    /// Creates the directory that will hold `path`, owner-only (0700), when it is missing; an
    /// existing directory is left as it is. Fails with code 0 (a file-system failure).
    package static func createPrivateDirectory(containing path: String) throws(SQLiteError) {
        let directory = (path as NSString).deletingLastPathComponent
        guard !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) else { return }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw SQLiteError(path: path, code: 0, message: "cannot create \(directory): \(error.localizedDescription)")
        }
    }

    /// Opens (creating, mode 0600) the database at `path` for durable shared use (`makeDurable`).
    package static func openDurable(path: String, busyTimeoutMilliseconds: Int32) throws(SQLiteError) -> SQLiteConnection {
        try preparePrivateFile(path)
        let connection = try SQLiteConnection(path: path, create: true, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        try connection.makeDurable(busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        return connection
    }

    /// Puts this database in the mode every store here uses: WAL journal (readers do not block
    /// the writer) and `synchronous = FULL` (a commit is on stable storage when it returns).
    /// Switching a new file to WAL needs an exclusive lock, and SQLite answers BUSY (or leaves the
    /// mode unchanged) without calling the busy handler when another process is opening the same
    /// new file at that moment: the switch is retried for up to the busy timeout.
    package func makeDurable(busyTimeoutMilliseconds: Int32) throws(SQLiteError) {
        var mode = ""
        for _ in 0...max(1, Int(busyTimeoutMilliseconds) / 10) {
            do throws(SQLiteError) {
                mode = try text("PRAGMA journal_mode = WAL")
                if mode.lowercased() == "wal" { break }
            } catch {
                guard error.isBusy else { throw error }
            }
            usleep(10_000)
        }
        guard mode.lowercased() == "wal" else { throw SQLiteError(path: path, code: 0, message: "cannot enable WAL (mode \(mode))") }
        try execute("PRAGMA synchronous = FULL")
    }
}
