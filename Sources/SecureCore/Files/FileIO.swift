#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if canImport(CLinuxExtras)
import CLinuxExtras
#endif
import Foundation

/// A readable POSIX file descriptor with exact, EINTR-safe reads.
public struct FileInput: ~Copyable {
    /// The file descriptor read from (closed when this value is released, if it was opened here).
    public let descriptor: Int32
    private let ownsDescriptor: Bool
    /// A name for error messages.
    public let path: String

    /// Opens `path` for reading.
    /// Throws `SecureCoreError.io` when it cannot be opened.
    public init(path: String) throws(SecureCoreError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SecureCoreError.io(path: path, reason: String(cString: strerror(errno))) }
        self.descriptor = fd
        self.ownsDescriptor = true
        self.path = path
    }

    /// Reads from an existing descriptor (for example 0 for standard input) without closing it.
    public init(descriptor: Int32, name: String) {
        self.descriptor = descriptor
        self.ownsDescriptor = false
        self.path = name
    }

    deinit { if ownsDescriptor { close(descriptor) } }

    /// Bytes already read by `peek` and not yet returned by a read.
    private let peeked = PeekBuffer()

    /// Returns up to `count` upcoming bytes without consuming them (to detect a format on a pipe).
    /// Throws `SecureCoreError.io` when the read fails.
    public func peek(_ count: Int) throws(SecureCoreError) -> Data {
        if peeked.bytes.count < count {
            var more = Data(count: count - peeked.bytes.count)
            let n = try more.withUnsafeMutableBytes { buffer in Result { () throws(SecureCoreError) in try readFromDescriptor(into: buffer) } }.get()
            peeked.bytes.append(more.prefix(n))
        }
        return peeked.bytes.prefix(count)
    }

    /// Fills `buffer` as far as the input allows; returns the byte count, less than the buffer's
    /// size only at end of input.
    /// Throws `SecureCoreError.io` when the read fails.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SecureCoreError) -> Int {
        var total = 0
        if !peeked.bytes.isEmpty {
            total = min(peeked.bytes.count, buffer.count)
            peeked.bytes.copyBytes(to: buffer.bindMemory(to: UInt8.self), count: total)
            peeked.bytes.removeFirst(total)
        }
        return total + (try readFromDescriptor(into: UnsafeMutableRawBufferPointer(rebasing: buffer[total...])))
    }

    /// Reads what the input holds now, up to the buffer's size: one read, waiting only until at
    /// least one byte (or the end of input) is there, as a pipe or a terminal hands bytes over.
    /// Returns 0 only at the end of input.
    /// Throws `SecureCoreError.io` when the read fails.
    public func readAvailable(into buffer: UnsafeMutableRawBufferPointer) throws(SecureCoreError) -> Int {
        guard peeked.bytes.isEmpty else {
            let count = min(peeked.bytes.count, buffer.count)
            peeked.bytes.copyBytes(to: buffer.bindMemory(to: UInt8.self), count: count)
            peeked.bytes.removeFirst(count)
            return count
        }
        while true {
            let n = Foundation.read(descriptor, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno != EINTR { throw SecureCoreError.io(path: path, reason: String(cString: strerror(errno))) }
        }
    }

    /// Whether a read would return at once: bytes are waiting, or the end of input (or an error)
    /// is there. A regular file is always ready.
    public var isReadyToRead: Bool {
        if !peeked.bytes.isEmpty { return true }
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let n = poll(&entry, 1, 0)
            if n >= 0 { return n > 0 }
            if errno != EINTR { return true }  // the read that follows reports the error
        }
    }

    private func readFromDescriptor(into buffer: UnsafeMutableRawBufferPointer) throws(SecureCoreError) -> Int {
        try ReadLoop.fill(buffer) { (part: UnsafeMutableRawBufferPointer) throws(SecureCoreError) in
            while true {
                let n = Foundation.read(descriptor, part.baseAddress, part.count)
                if n >= 0 { return n }
                if errno != EINTR { throw SecureCoreError.io(path: path, reason: String(cString: strerror(errno))) }
            }
        }
    }

    /// Reads up to `count` bytes; fewer only at end of input.
    /// Throws `SecureCoreError.io` when the read fails.
    public func read(upTo count: Int) throws(SecureCoreError) -> Data {
        var data = Data(count: count)
        let n = try data.withUnsafeMutableBytes { buffer in Result { () throws(SecureCoreError) in try read(into: buffer) } }.get()
        data.count = n
        return data
    }

    /// Reads everything that remains.
    /// Throws `SecureCoreError.io` when a read fails.
    public func readToEnd(chunkSize: Int = 1 << 20) throws(SecureCoreError) -> Data {
        try readToEnd(limit: .max, chunkSize: chunkSize)
    }

    /// Reads everything that remains, refusing more than `limit` bytes with `inputTooLarge`: a
    /// regular file by its size before anything is read, any other input (a pipe, a terminal) as
    /// soon as the reading passes the limit, so memory never holds much more than `limit`.
    /// Throws `SecureCoreError.io` when a read fails.
    public func readToEnd(limit: Int, chunkSize: Int = 1 << 20) throws(SecureCoreError) -> Data {
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size > limit {
            throw .inputTooLarge(path: path, limit: limit)
        }
        var all = Data()
        while true {
            let chunk = try read(upTo: chunkSize)
            guard chunk.count <= limit - all.count else { throw .inputTooLarge(path: path, limit: limit) }
            all.append(chunk)
            if chunk.count < chunkSize { return all }
        }
    }
}

/// Holds peeked bytes; a reference so that reads on a borrowed `FileInput` can consume them.
private final class PeekBuffer {
    var bytes = Data()
}

/// A writable POSIX file descriptor with complete, EINTR-safe writes.
///
/// Into a regular file on Linux, every 16 MiB written is handed to the kernel for writing to disk
/// at once (`sync_file_range`), so the fsync that makes a large output durable finds little left to
/// do, and disk writes overlap with the work producing the data instead of following it.
public struct FileOutput: ~Copyable {
    /// The file descriptor written to (closed when this value is released, if it was opened here).
    public let descriptor: Int32
    private let ownsDescriptor: Bool
    /// A name for error messages.
    public let path: String
    private let writeback: Writeback?

    /// Writes to an existing descriptor (for example 1 for standard output) without closing it.
    public init(descriptor: Int32, name: String) {
        self.descriptor = descriptor
        self.ownsDescriptor = false
        self.path = name
        self.writeback = Writeback(descriptor: descriptor)
    }

    init(ownedDescriptor: Int32, path: String) {
        self.descriptor = ownedDescriptor
        self.ownsDescriptor = true
        self.path = path
        self.writeback = Writeback(descriptor: ownedDescriptor)
    }

    deinit { if ownsDescriptor { close(descriptor) } }

    /// Writes all of `bytes`.
    /// Throws `SecureCoreError.io` when the write fails (for example a full disk).
    public func write(_ bytes: UnsafeRawBufferPointer) throws(SecureCoreError) {
        var offset = 0
        while offset < bytes.count {
            let n = Foundation.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw SecureCoreError.io(path: path, reason: String(cString: strerror(errno)))
            }
            offset += n
        }
        writeback?.wrote(bytes.count)
    }

    /// Writes all of `data`. Throws `SecureCoreError.io` when the write fails.
    public func write<D: ContiguousBytes>(_ data: D) throws(SecureCoreError) {
        try data.withUnsafeBytes { bytes in Result { () throws(SecureCoreError) in try write(bytes) } }.get()
    }

    /// Forces written data to stable storage.
    /// Throws `SecureCoreError.io` when fsync fails.
    public func sync() throws(SecureCoreError) {
        guard fsync(descriptor) == 0 else {
            throw SecureCoreError.io(path: path, reason: "fsync: " + String(cString: strerror(errno)))
        }
    }
}

/// The early writeback of a `FileOutput` into a regular file: where the writes began and how far
/// the kernel has been asked to write. A reference, so that writes through a borrowed output count.
private final class Writeback {
    /// The bytes between two requests.
    static let step: off_t = 16 << 20
    private let descriptor: Int32
    private var position: off_t
    private var requestedUpTo: off_t

    /// Nil unless `descriptor` is a regular file at a known position, on Linux.
    init?(descriptor: Int32) {
        #if canImport(CLinuxExtras)
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        let start = lseek(descriptor, 0, SEEK_CUR)
        guard start >= 0 else { return nil }
        self.descriptor = descriptor
        position = start
        requestedUpTo = start
        #else
        return nil
        #endif
    }

    /// Counts `count` bytes written; asks for the writeback of each further `step`.
    func wrote(_ count: Int) {
        position += off_t(count)
        #if canImport(CLinuxExtras)
        guard position - requestedUpTo >= Self.step else { return }
        // Advisory: a failure (an unsupported file system) changes nothing but timing.
        _ = sync_file_range(descriptor, requestedUpTo, position - requestedUpTo, UInt32(SYNC_FILE_RANGE_WRITE))
        requestedUpTo = position
        #endif
    }
}

/// Writes files so that readers (and a crash at any moment) see either the old file or the complete
/// new one, never a partial file: temporary file in the same directory, fsync, rename, fsync of the
/// directory. The public entry point is `OutputDestination.write`, which sends regular files here
/// (and writes devices and pipes in place).
enum AtomicFile {
    /// The one implementation: `body`'s errors pass through as `E`, the file's own failures are
    /// made into an `E` by `wrap` (so a `SecureCoreError`-only body keeps a typed throw).
    static func write<R, E: Error>(
        to path: String, permissions: mode_t, overwrite: Bool, _ body: (borrowing FileOutput) throws(E) -> R,
        as wrap: (SecureCoreError) -> E
    ) throws(E) -> R {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let temporary = directory + "/." + url.lastPathComponent + ".tmp-" + Hex.encode(SecureRandom.bytes(count: 8))
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions)
        guard fd >= 0 else { throw wrap(.io(path: path, reason: String(cString: strerror(errno)))) }
        // Removed by a termination signal while pending (see `TemporaryFiles`).
        TemporaryFiles.registry.insert(temporary)
        defer { TemporaryFiles.registry.remove(temporary) }
        do throws(E) {
            let output = FileOutput(ownedDescriptor: fd, path: path)
            let result = try body(output)
            do { try output.sync() } catch { throw wrap(error) }
            if overwrite {
                guard rename(temporary, path) == 0 else {
                    throw wrap(.io(path: path, reason: "rename: " + String(cString: strerror(errno))))
                }
            } else {
                // link(2) fails with EEXIST instead of replacing, atomically.
                guard link(temporary, path) == 0 else {
                    throw wrap(errno == EEXIST
                        ? SecureCoreError.fileExists(path: path)
                        : SecureCoreError.io(path: path, reason: String(cString: strerror(errno))))
                }
                unlink(temporary)
            }
            syncDirectory(directory)
            return result
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// Makes a rename in `directory` durable. Best effort: some file systems refuse fsync on directories.
    static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }
}
