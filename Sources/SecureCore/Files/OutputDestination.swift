#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// Where output named by a path goes: the one output policy of SecureFoundation's file-writing APIs
/// and of every `sf` command that takes an output path.
///
/// - A regular file, or a path that does not exist yet, is written through `AtomicFile`
///   (temporary file in the same directory, fsync, rename): readers and a crash see the old
///   contents or the complete new ones, never a prefix. A symbolic link to a regular file is
///   resolved first, so the file it names is replaced and the link stays a link.
/// - A character or block device, a FIFO or a socket, named directly or through symbolic links
///   (`/dev/null`, `/dev/stdout`, `/dev/fd/3`), is opened and written in place. It is never
///   renamed over, so `-o /dev/null` run as root leaves the system's `/dev/null` a device. Such
///   output is not atomic: a reader of a pipe sees bytes as they are written.
/// - A regular file reached through a symbolic link that does not resolve to a path naming that
///   same file (`/proc/self/fd/1` of a memfd or of a deleted file, `/dev/stdout` redirected to one)
///   is truncated and written in place: there is no path to rename over, and renaming over the
///   link would replace the link (`/dev/stdout` itself, run as root) with a file.
/// - A directory is refused.
public enum OutputDestination: Equatable, Sendable {
    /// A regular file or a new path, replaced atomically. `path` is the file itself (links resolved).
    case file(path: String)
    /// A device, FIFO or socket, written in place and never replaced.
    case special(path: String)
    /// A regular file with no path of its own (see above), truncated and written in place through
    /// the link; not atomic.
    case linkedFile(path: String)

    /// Classifies `path` by what is there now. Throws `SecureCoreError.io` for a directory.
    public init(path: String) throws(SecureCoreError) {
        var linkStatus = stat()
        guard lstat(path, &linkStatus) == 0 else {
            // Nothing there (or unreadable): a new file, created atomically.
            self = .file(path: path)
            return
        }
        var status = stat()
        guard stat(path, &status) == 0 else {
            // A dangling symbolic link: replacing the link itself is the only thing a write can do.
            self = .file(path: path)
            return
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            guard linkStatus.st_mode & S_IFMT == S_IFLNK else {
                self = .file(path: path)
                return
            }
            // The resolved path must name the very file the link reaches (realpath of a
            // /proc/self/fd link to a deleted file gives "… (deleted)", which names nothing or another file).
            var resolvedStatus = stat()
            if let resolved = FilePaths.canonical(path), stat(resolved, &resolvedStatus) == 0,
                resolvedStatus.st_dev == status.st_dev, resolvedStatus.st_ino == status.st_ino
            {
                self = .file(path: resolved)
            } else {
                self = .linkedFile(path: path)
            }
        case S_IFDIR:
            throw .io(path: path, reason: "is a directory")
        default:
            self = .special(path: path)
        }
    }

    /// The path that is written (for a file, with symbolic links resolved).
    public var path: String {
        switch self {
        case .file(let path), .special(let path), .linkedFile(let path): return path
        }
    }

    /// Runs `body` with an output for this destination. For `.file`, atomically (a temporary file,
    /// fsync, rename, fsync of the directory): the file appears complete when `body` returns and
    /// is untouched when it throws. For `.special`,
    /// bytes go straight to the device or pipe. With `overwrite: false`, any existing entry at the
    /// path (a file, a device, a symbolic link, even a dangling one) is left alone and
    /// `SecureCoreError.fileExists` is thrown before `body` runs.
    ///
    /// Throws `SecureCoreError` (`.io`, `.fileExists`) for the destination itself, or what `body` throws.
    public func write<R>(
        permissions: mode_t = 0o600, overwrite: Bool = true, _ body: (borrowing FileOutput) throws -> R
    ) throws -> R {
        try write(permissions: permissions, overwrite: overwrite, body, as: { $0 })
    }

    /// The one implementation (see `AtomicFile.write(to:permissions:overwrite:_:as:)`).
    func write<R, E: Error>(
        permissions: mode_t, overwrite: Bool, _ body: (borrowing FileOutput) throws(E) -> R, as wrap: (SecureCoreError) -> E
    ) throws(E) -> R {
        switch self {
        case .file(let path):
            return try AtomicFile.write(to: path, permissions: permissions, overwrite: overwrite, body, as: wrap)
        case .special(let path):
            guard overwrite else { throw wrap(.fileExists(path: path)) }
            let fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY)
            guard fd >= 0 else { throw wrap(.io(path: path, reason: String(cString: strerror(errno)))) }
            let output = FileOutput(ownedDescriptor: fd, path: path)
            // The entry could have been swapped for a regular file since it was classified; never
            // write a regular file in place (that could leave a partial file).
            var status = stat()
            guard fstat(fd, &status) == 0, status.st_mode & S_IFMT != S_IFREG else {
                throw wrap(.io(path: path, reason: "changed from a device or pipe to a file while opening"))
            }
            return try body(output)
        case .linkedFile(let path):
            guard overwrite else { throw wrap(.fileExists(path: path)) }
            let fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY)
            guard fd >= 0 else { throw wrap(.io(path: path, reason: String(cString: strerror(errno)))) }
            return try body(FileOutput(ownedDescriptor: fd, path: path))
        }
    }

    /// Classifies `path` and writes to it with `body` (see `write(permissions:overwrite:_:)`).
    /// Throws `SecureCoreError` for the destination itself, or what `body` throws.
    public static func write<R>(
        to path: String, permissions: mode_t = 0o600, overwrite: Bool = true, _ body: (borrowing FileOutput) throws -> R
    ) throws -> R {
        try write(to: path, permissions: permissions, overwrite: overwrite, body, as: { $0 })
    }

    /// The one implementation of the static writes.
    static func write<R, E: Error>(
        to path: String, permissions: mode_t, overwrite: Bool, _ body: (borrowing FileOutput) throws(E) -> R,
        as wrap: (SecureCoreError) -> E
    ) throws(E) -> R {
        if !overwrite {
            var status = stat()
            if lstat(path, &status) == 0 { throw wrap(.fileExists(path: path)) }
        }
        let destination: OutputDestination
        do { destination = try OutputDestination(path: path) } catch { throw wrap(error) }
        return try destination.write(permissions: permissions, overwrite: overwrite, body, as: wrap)
    }

    /// Classifies `path` and writes `data` to it (see `write(permissions:overwrite:_:)`). Throws
    /// `SecureCoreError` (`.io`, `.fileExists`).
    public static func write<D: ContiguousBytes>(
        _ data: D, to path: String, permissions: mode_t = 0o600, overwrite: Bool = true
    ) throws(SecureCoreError) {
        try write(to: path, permissions: permissions, overwrite: overwrite, { output throws(SecureCoreError) in try output.write(data) }, as: { $0 })
    }
}
