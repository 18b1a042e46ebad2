import Foundation
import SecureCore

extension Age {
    /// The ASCII armor of age files: strict RFC 7468 PEM with the label `AGE ENCRYPTED FILE`,
    /// canonical padded base64 in 64-column lines. Only whitespace may surround the block; LF and
    /// CRLF line endings are both accepted.
    public enum Armor {
        static let beginLine = Array("-----BEGIN AGE ENCRYPTED FILE-----".utf8)
        static let endLine = Array("-----END AGE ENCRYPTED FILE-----".utf8)
        /// How much whitespace is tolerated before and after the block.
        static let maximumSurroundingWhitespace = 1024

        static func isWhitespace(_ c: UInt8) -> Bool {
            c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d || c == 0x0b || c == 0x0c
        }

        /// True when `source` (after leading whitespace) starts with `-`, which no binary age file does.
        static func looksArmored(_ source: BufferedSource) throws -> Bool {
            let start = try source.peek(maximumSurroundingWhitespace + 1)
            return start.first(where: { !isWhitespace($0) }) == UInt8(ascii: "-")
        }
    }
}

/// Decodes the armor as a byte stream, line by line, so memory stays bounded.
final class ArmorReader: Age.ByteSource {
    private let source: BufferedSource
    private var decoded = Data()
    private var decodedOffset = 0
    private var started = false
    private var ended = false
    private var sawShortLine = false

    init(_ source: BufferedSource) { self.source = source }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var total = 0
        while total < buffer.count {
            if decodedOffset == decoded.count {
                if ended { break }
                try decodeNextLine()
                continue
            }
            let n = min(buffer.count - total, decoded.count - decodedOffset)
            decoded.copyBytes(
                to: UnsafeMutableRawBufferPointer(rebasing: buffer[total..<total + n]).bindMemory(to: UInt8.self),
                from: decodedOffset..<decodedOffset + n)
            decodedOffset += n
            total += n
        }
        return total
    }

    private func decodeNextLine() throws {
        decoded.removeAll(keepingCapacity: true)
        decodedOffset = 0
        if !started {
            try source.skipWhitespace(limit: Age.Armor.maximumSurroundingWhitespace)
            guard try nextLine() == Age.Armor.beginLine else {
                throw AgeError.armor("the first line is not \"-----BEGIN AGE ENCRYPTED FILE-----\"")
            }
            started = true
            return
        }
        let line = try nextLine()
        if line == Age.Armor.endLine {
            ended = true
            guard try source.remainingIsWhitespace(limit: Age.Armor.maximumSurroundingWhitespace) else {
                throw AgeError.armor("data follows the END line")
            }
            return
        }
        guard !sawShortLine else { throw AgeError.armor("a line shorter than 64 columns is not the last one") }
        guard !line.isEmpty, line.count <= 64, line.count % 4 == 0 else {
            throw AgeError.armor("a base64 line is empty, longer than 64 columns or not a multiple of 4 long")
        }
        if line.count < 64 || line.last == UInt8(ascii: "=") { sawShortLine = true }
        guard let bytes = try? Base64.decode(String(decoding: line, as: UTF8.self)) else {
            throw AgeError.armor("a line is not canonical base64")
        }
        decoded = bytes
    }

    /// The next line without LF or CRLF; a missing final line ending is accepted.
    private func nextLine() throws -> [UInt8] {
        let read: [UInt8]?
        do {
            read = try source.readLine(maximumLength: 128, acceptingUnterminated: true)
        } catch is BufferedSource.LineTooLong {
            throw AgeError.armor("a line is longer than 128 bytes")
        }
        guard var line = read else { throw AgeError.armor("the END line is missing") }
        if line.last == 0x0d { line.removeLast() }
        return line
    }
}

/// Encodes everything written to it as armor; `finish()` writes the last line and the END line.
final class ArmorWriter: Age.ByteSink {
    private let sink: Age.ByteSink
    private var pending = Data()
    /// Bytes encoded at a time: a multiple of 48, so every block ends on a full line.
    private let block = 48 * 1024

    init(sink: Age.ByteSink) throws {
        self.sink = sink
        try emit(Age.Armor.beginLine + [0x0a])
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        pending.append(contentsOf: bytes)
        if pending.count >= block {
            let whole = pending.count - pending.count % 48
            try encode(pending.prefix(whole))
            pending.removeFirst(whole)
        }
    }

    func finish() throws {
        if !pending.isEmpty { try encode(pending) }
        pending.removeAll()
        try emit(Age.Armor.endLine + [0x0a])
    }

    private func encode(_ bytes: Data) throws {
        var text = Data(bytes).base64EncodedData(options: [.lineLength64Characters, .endLineWithLineFeed])
        text.append(0x0a)
        try text.withUnsafeBytes { try sink.write($0) }
    }

    private func emit(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try sink.write($0) } }
}
