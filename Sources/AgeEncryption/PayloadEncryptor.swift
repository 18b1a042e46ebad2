import Crypto
import Dispatch
import Foundation
import SecureCore

/// Encrypts the STREAM payload. Plaintext collects in a buffer of `batchChunks + 1` chunk slots;
/// once a byte reaches the extra slot, the chunks before it are known not to be last and are sealed
/// in parallel and written in order.
///
/// `write(from:)` also overlaps input and output with sealing: while the cores seal one buffer, an
/// I/O queue writes the previous batch and fills the other buffer.
final class PayloadEncryptor {
    private let sink: Age.ByteSink
    private let key: SymmetricKey
    private static let batchBytes = Stream.batchChunks * Stream.chunkSize
    private static let capacity = (Stream.batchChunks + 1) * Stream.chunkSize
    private var current = SlotBuffer(slots: 1, slotSize: capacity)
    private var spare: SlotBuffer?
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
            if used > Self.batchBytes {
                try writeOut(seal(chunks: Stream.batchChunks, final: false))
                used = carryExtraSlot(into: current)
            }
            let n = min(bytes.count - offset, Self.capacity - used)
            (current.slot(0).baseAddress! + used).copyMemory(from: bytes.baseAddress! + offset, byteCount: n)
            used += n
            offset += n
        }
    }

    /// Reads `source` to its end, pipelined: the I/O queue writes batch k-1 and reads batch k+1
    /// while batch k is sealed.
    func write(from source: Age.ByteSource) throws {
        precondition(!finished, "write after finish")
        let io = IOStage(source: source, sink: sink)
        used += try io.fill(current, from: used)
        var sealed = [Data]()
        while used > Self.batchBytes {
            let next = spare ?? SlotBuffer(slots: 1, slotSize: Self.capacity)
            let carried = carryExtraSlot(into: next)
            io.start(fill: next, from: carried, writing: sealed)
            sealed = seal(chunks: Stream.batchChunks, final: false)
            let read = try io.finishPending()
            spare = current
            current = next
            used = carried + read
        }
        try writeOut(sealed)
    }

    /// Seals what remains, marking the last chunk final (one empty final chunk for an empty payload).
    func finish() throws {
        precondition(!finished, "finish called twice")
        finished = true
        let chunks = max(1, (used + Stream.chunkSize - 1) / Stream.chunkSize)
        try writeOut(seal(chunks: chunks, final: true))
        used = 0
    }

    /// Copies the bytes in the extra slot of `current` to the start of `destination` (which may be
    /// `current`: the regions cannot overlap); returns their count.
    private func carryExtraSlot(into destination: SlotBuffer) -> Int {
        let extra = used - Self.batchBytes
        destination.slot(0).baseAddress!.copyMemory(from: current.slot(0).baseAddress! + Self.batchBytes, byteCount: extra)
        return extra
    }

    private func writeOut(_ boxes: [Data]) throws {
        for box in boxes { try box.withUnsafeBytes { try sink.write($0) } }
    }

    /// Seals `chunks` chunks of `current` in parallel; returns each `ciphertext || tag`, in order.
    private func seal(chunks: Int, final: Bool) -> [Data] {
        let boxes = ResultSlots<Data>(count: chunks, initialValue: Data())
        defer { boxes.deallocate() }
        let first = counter, used = self.used, key = self.key, buffer = current
        Stream.parallel(chunks) { i in
            let start = i * Stream.chunkSize
            let plaintext = UnsafeRawBufferPointer(
                start: buffer.slot(0).baseAddress! + start, count: min(Stream.chunkSize, used - start))
            let nonce = Stream.nonce(counter: first + UInt64(i), last: final && i == chunks - 1)
            // Sealing cannot fail for a 32-byte key and 12-byte nonce.
            boxes[i] = try! ChaChaPoly.seal(plaintext, using: key, nonce: nonce).combined.dropFirst(12)
        }
        counter += UInt64(chunks)
        return (0..<chunks).map { boxes[$0] }
    }
}

/// The I/O side of the encryption pipeline: one job at a time on a serial queue, handed off with
/// exclusive access (the owner touches neither the source, the sink nor the buffer until
/// `finishPending()` returned), which is why the unchecked Sendable conformance is sound.
private final class IOStage: @unchecked Sendable {
    private let source: Age.ByteSource
    private let sink: Age.ByteSink
    private let queue = DispatchQueue(label: "age.encrypt.io")
    private let done = DispatchSemaphore(value: 0)
    private var pending = false
    private var result: Result<Int, Error> = .success(0)

    init(source: Age.ByteSource, sink: Age.ByteSink) {
        self.source = source
        self.sink = sink
    }

    /// Fills `buffer` from `offset` to its end (less only at the end of input); returns the count.
    func fill(_ buffer: SlotBuffer, from offset: Int) throws -> Int {
        try source.readFully(into: UnsafeMutableRawBufferPointer(rebasing: buffer.slot(0)[offset...]))
    }

    /// Starts writing `boxes`, then filling `buffer` from `offset`, in the background.
    func start(fill buffer: SlotBuffer, from offset: Int, writing boxes: [Data]) {
        pending = true
        queue.async {
            self.result = Result {
                for box in boxes { try box.withUnsafeBytes { try self.sink.write($0) } }
                return try self.fill(buffer, from: offset)
            }
            self.done.signal()
        }
    }

    /// Waits for the background job; returns the bytes it read (0 when none was pending).
    @discardableResult
    func finishPending() throws -> Int {
        guard pending else { return 0 }
        done.wait()
        pending = false
        return try result.get()
    }
}
