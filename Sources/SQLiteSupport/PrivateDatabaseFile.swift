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
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw SQLiteError(path: path, code: 0, message: "cannot create \(directory): \(error.localizedDescription)")
            }
        }
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

    /// Opens (creating, mode 0600) the database at `path` for durable shared use: WAL journal (readers
    /// do not block the writer) and `synchronous = FULL` (a commit is on stable storage when it returns).
    package static func openDurable(path: String, busyTimeoutMilliseconds: Int32) throws(SQLiteError) -> SQLiteConnection {
        try preparePrivateFile(path)
        let connection = try SQLiteConnection(path: path, create: true, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        // Switching a new file to WAL needs an exclusive lock, and SQLite answers BUSY (or leaves the
        // mode unchanged) without calling the busy handler when another process is opening the
        // same new file at that moment: retry for up to the busy timeout.
        var mode = ""
        for _ in 0...max(1, Int(busyTimeoutMilliseconds) / 10) {
            do throws(SQLiteError) {
                mode = try connection.text("PRAGMA journal_mode = WAL")
                if mode.lowercased() == "wal" { break }
            } catch {
                guard error.isBusy else { throw error }
            }
            usleep(10_000)
        }
        guard mode.lowercased() == "wal" else { throw SQLiteError(path: path, code: 0, message: "cannot enable WAL (mode \(mode))") }
        try connection.execute("PRAGMA synchronous = FULL")
        return connection
    }
}
