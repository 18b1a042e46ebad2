import Crypto
import Foundation
import SecureCore

/// Encrypts the STREAM payload. Plaintext collects in `batchChunks + 1` reusable chunk slots; once a
/// byte reaches the extra slot, the chunks before it are known not to be last and are sealed in
/// parallel and written in order.
final class PayloadEncryptor {
    private let sink: Age.ByteSink
    private let key: SymmetricKey
    private let capacity = (Stream.batchChunks + 1) * Stream.chunkSize
    private let buffer = SlotBuffer(slots: 1, slotSize: (Stream.batchChunks + 1) * Stream.chunkSize)
    private var used = 0
    private var counter: UInt64 = 0
    private var finished = false

    init(sink: Age.ByteSink, key: SymmetricKey) {
        self.sink = sink
        self.key = key
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        precondition(!finished, "write after finish")
        var offset = 0
        while offset < bytes.count {
            try flushFullBatch()
            let n = min(bytes.count - offset, capacity - used)
            (buffer.slot(0).baseAddress! + used).copyMemory(from: bytes.baseAddress! + offset, byteCount: n)
            used += n
            offset += n
        }
    }

    /// Reads `source` to its end straight into the chunk slots.
    func write(from source: Age.ByteSource) throws {
        precondition(!finished, "write after finish")
        while true {
            try flushFullBatch()
            let space = capacity - used
            let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer.slot(0)[used..<capacity]))
            used += n
            if n < space { return }
        }
    }

    /// Seals what remains, marking the last chunk final (one empty final chunk for an empty payload).
    func finish() throws {
        precondition(!finished, "finish called twice")
        finished = true
        let chunks = max(1, (used + Stream.chunkSize - 1) / Stream.chunkSize)
        try seal(chunks: chunks, lastIsFinal: true)
        used = 0
    }

    /// When the extra slot holds data, seals the full batch before it and moves that data to the front.
    private func flushFullBatch() throws {
        let batchBytes = Stream.batchChunks * Stream.chunkSize
        guard used > batchBytes else { return }
        try seal(chunks: Stream.batchChunks, lastIsFinal: false)
        let base = buffer.slot(0).baseAddress!
        base.copyMemory(from: base + batchBytes, byteCount: used - batchBytes)
        used -= batchBytes
    }

    private func seal(chunks: Int, lastIsFinal: Bool) throws {
        let boxes = ResultSlots<Data?>(count: chunks, initialValue: nil)
        defer { boxes.deallocate() }
        let first = counter, used = self.used, key = self.key, buffer = self.buffer
        Stream.parallel(chunks) { i in
            let start = i * Stream.chunkSize
            let plaintext = UnsafeRawBufferPointer(
                start: buffer.slot(0).baseAddress! + start, count: min(Stream.chunkSize, used - start))
            let nonce = Stream.nonce(counter: first + UInt64(i), last: lastIsFinal && i == chunks - 1)
            boxes[i] = try? ChaChaPoly.seal(plaintext, using: key, nonce: nonce).combined
        }
        for i in 0..<chunks {
            guard let combined = boxes[i] else { throw AgeError.io("ChaCha20-Poly1305 sealing failed") }
            try combined.dropFirst(12).withUnsafeBytes { try sink.write($0) }
        }
        counter += UInt64(chunks)
    }
}
