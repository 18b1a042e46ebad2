import Foundation
import SecureCore

/// Runs `body`, reporting SecureCore's I/O failures as `AgeError.io`.
func ioErrors<R: ~Copyable>(_ body: () throws -> R) throws -> R {
    do {
        return try body()
    } catch let error as SecureCoreError {
        throw AgeError.io(error)
    }
}

extension Age.ByteSource {
    /// Reads until `buffer` is full or the source reports the end of input (a read of 0 bytes);
    /// returns the count, less than the buffer's size only at the end of input.
    func readFully(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try ReadLoop.fill(buffer) { try read(into: $0) }
    }
}

extension Age {
    /// A source of bytes for decryption or encryption. Not shared across threads.
    public protocol ByteSource: AnyObject {
        /// Reads into `buffer` and returns the byte count: 0 only at the end of the input. A
        /// count below the buffer's size (a short read, as sockets and pipes give) is allowed:
        /// the library keeps reading until a read returns 0, so it never mistakes one for the end.
        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    }

    /// A destination of bytes for decryption or encryption. Not shared across threads.
    public protocol ByteSink: AnyObject {
        /// Writes all of `bytes`.
        func write(_ bytes: UnsafeRawBufferPointer) throws
    }

    /// Reads a POSIX file descriptor (a file, a pipe, standard input), through SecureCore's `FileInput`.
    public final class DescriptorSource: ByteSource {
        private let input: FileInput

        /// Reads `descriptor`, which the caller keeps open and closes.
        public init(descriptor: Int32, name: String) {
            input = FileInput(descriptor: descriptor, name: name)
        }

        /// Opens `path` for reading; the descriptor is closed with this object.
        /// Throws `AgeError.io` when it cannot be opened.
        public init(path: String) throws {
            input = try ioErrors { try FileInput(path: path) }
        }

        /// Throws `AgeError.io` when the read fails.
        public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            try ioErrors { try input.read(into: buffer) }
        }
    }

    /// Writes a POSIX file descriptor, which the caller keeps open and closes, through SecureCore's `FileOutput`.
    public final class DescriptorSink: ByteSink {
        private let output: FileOutput

        /// Writes to `descriptor` (for example 1 for standard output).
        public init(descriptor: Int32, name: String) {
            output = FileOutput(descriptor: descriptor, name: name)
        }

        /// Throws `AgeError.io` when the write fails.
        public func write(_ bytes: UnsafeRawBufferPointer) throws {
            try ioErrors { try output.write(bytes) }
        }
    }

    /// Reads from bytes in memory.
    public final class DataSource: ByteSource {
        private let data: Data
        private var offset = 0

        /// Reads `data` from its start.
        public init(_ data: Data) { self.data = data }

        /// Copies the next bytes; never throws.
        public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            let n = min(buffer.count, data.count - offset)
            guard n > 0 else { return 0 }
            let start = data.startIndex + offset
            data.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: start..<start + n)
            offset += n
            return n
        }
    }

    /// Collects written bytes in memory.
    public final class DataSink: ByteSink {
        /// Everything written so far.
        public private(set) var data = Data()

        /// An empty sink.
        public init() {}

        /// Appends `bytes`; never throws.
        public func write(_ bytes: UnsafeRawBufferPointer) throws { data.append(contentsOf: bytes) }
    }
}

/// A source with read-ahead, so the header parser can read lines and the payload reader can take
/// over exactly where the header ended.
final class BufferedSource: Age.ByteSource {
    private let base: Age.ByteSource
    private var pending = [UInt8]()
    private var pendingStart = 0
    private var atEnd = false
    private let refill = 4096

    init(_ base: Age.ByteSource) { self.base = base }

    /// A line longer than the maximum asked for.
    struct LineTooLong: Error {}

    /// The next line without its LF; nil at the end of input; throws `LineTooLong` when no LF
    /// comes within `maximumLength` bytes. With `acceptingUnterminated`, a non-empty last line
    /// without LF is returned.
    func readLine(maximumLength: Int, acceptingUnterminated: Bool = false) throws -> [UInt8]? {
        var searchFrom = pendingStart
        while true {
            if let lf = pending[searchFrom...].firstIndex(of: UInt8(ascii: "\n")) {
                guard lf - pendingStart <= maximumLength else { throw LineTooLong() }
                let line = Array(pending[pendingStart..<lf])
                pendingStart = lf + 1
                return line
            }
            let scanned = pending.count - pendingStart
            guard scanned <= maximumLength else { throw LineTooLong() }
            if try !fill() {
                guard acceptingUnterminated, scanned > 0 else { return nil }
                let line = Array(pending[pendingStart...])
                pendingStart = pending.count
                return line
            }
            searchFrom = pendingStart + scanned
        }
    }

    /// Consumes leading whitespace (at most `limit` bytes; more is left for the caller to refuse).
    func skipWhitespace(limit: Int) throws {
        let start = try peek(limit)
        pendingStart += start.prefix(while: Age.Armor.isWhitespace).count
    }

    /// True when only whitespace (at most `limit` bytes) remains; consumes it.
    func remainingIsWhitespace(limit: Int) throws -> Bool {
        let rest = try peek(limit + 1)
        guard rest.count <= limit, rest.allSatisfy(Age.Armor.isWhitespace) else { return false }
        pendingStart += rest.count
        return true
    }

    /// Up to `count` bytes without consuming them (fewer only at the end of input).
    func peek(_ count: Int) throws -> ArraySlice<UInt8> {
        while pending.count - pendingStart < count, try fill() {}
        return pending[pendingStart..<min(pending.count, pendingStart + count)]
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let buffered = min(buffer.count, pending.count - pendingStart)
        if buffered > 0 {
            pending.withUnsafeBytes { source in
                buffer.baseAddress!.copyMemory(from: source.baseAddress! + pendingStart, byteCount: buffered)
            }
            pendingStart += buffered
        }
        guard buffered < buffer.count, !atEnd else { return buffered }
        return try buffered + base.readFully(into: UnsafeMutableRawBufferPointer(rebasing: buffer[buffered...]))
    }

    /// Appends more input to `pending`; false at the end of input.
    private func fill() throws -> Bool {
        guard !atEnd else { return false }
        if pendingStart > 0 {
            pending.removeFirst(pendingStart)
            pendingStart = 0
        }
        let old = pending.count
        pending += [UInt8](repeating: 0, count: refill)
        let n = try pending.withUnsafeMutableBytes { try base.readFully(into: UnsafeMutableRawBufferPointer(rebasing: $0[old...])) }
        pending.removeLast(refill - n)
        if n < refill { atEnd = true }
        return n > 0
    }
}
