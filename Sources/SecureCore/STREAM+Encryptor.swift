import Foundation

extension STREAM {
    /// Seals a stream. Plaintext collects in a buffer of `chunksPerBatch + 1` chunks; once a byte
    /// reaches the extra chunk, the chunks before it are known not to be final and are sealed on all
    /// cores, then written in order. `finish` seals the rest and marks the last chunk final (one
    /// empty final chunk for an empty stream).
    ///
    /// `encrypt(reading:writing:)` overlaps the stages: while the cores seal batch k, the calling
    /// thread writes batch k-1 and reads batch k+1 into a second buffer. Memory stays near four
    /// batches (about 8 MiB with the defaults), whatever the input size; plaintext buffers are wiped
    /// when the encryptor is released.
    package final class Encryptor {
        private let stream: STREAM
        private let batchBytes: Int
        private let capacity: Int
        private var current: SlotBuffer
        private var spare: SlotBuffer?
        private var used = 0
        private var counter: UInt64 = 0
        private var finished = false

        /// An encryptor starting at chunk 0.
        package init(_ stream: STREAM) {
            self.stream = stream
            batchBytes = stream.chunksPerBatch * stream.chunkSize
            capacity = batchBytes + stream.chunkSize
            current = SlotBuffer(slots: 1, slotSize: capacity)
        }

        /// Buffers `bytes`, sealing and writing every batch that is complete.
        package func write(_ bytes: UnsafeRawBufferPointer, to sink: (UnsafeRawBufferPointer) throws -> Void) throws {
            precondition(!finished, "write after finish")
            var offset = 0
            while offset < bytes.count {
                if used > batchBytes {
                    try Self.write(seal(current, chunks: stream.chunksPerBatch, byteCount: batchBytes, final: false), to: sink)
                    used = carryExtraChunk(into: current)
                }
                let n = min(bytes.count - offset, capacity - used)
                (current.all.baseAddress! + used).copyMemory(from: bytes.baseAddress! + offset, byteCount: n)
                used += n
                offset += n
            }
        }

        /// Reads `read` to its end (a read of 0 bytes), seals everything and finishes the stream:
        /// the pipelined path, with reading and writing on the calling thread while the cores seal.
        package func encrypt(
            reading read: (UnsafeMutableRawBufferPointer) throws -> Int, writing sink: (UnsafeRawBufferPointer) throws -> Void
        ) throws {
            precondition(!finished, "encrypt after finish")
            used += try STREAM.readFully(into: UnsafeMutableRawBufferPointer(rebasing: current.all[used...]), read)
            var sealed = [Data]()
            while used > batchBytes {
                let next = spare ?? SlotBuffer(slots: 1, slotSize: capacity)
                // The extra chunk is outside what the cores read: copying it now is safe.
                let carried = carryExtraChunk(into: next)
                let job = BackgroundJob { [stream, current, counter, batchBytes] in
                    Result { try Self.seal(stream, current, chunks: stream.chunksPerBatch, byteCount: batchBytes, first: counter, final: false) }
                }
                counter += UInt64(stream.chunksPerBatch)
                do {
                    try Self.write(sealed, to: sink)
                    sealed = []
                    used = try carried + STREAM.readFully(into: UnsafeMutableRawBufferPointer(rebasing: next.all[carried...]), read)
                } catch {
                    _ = job.wait()  // the cores still use `current`: let them finish before it can be freed
                    throw error
                }
                sealed = try job.wait().get()
                spare = current
                current = next
            }
            try Self.write(sealed, to: sink)
            try finish(to: sink)
        }

        /// Seals what remains, marking the last chunk final. Call exactly once.
        package func finish(to sink: (UnsafeRawBufferPointer) throws -> Void) throws {
            precondition(!finished, "finish called twice")
            finished = true
            let chunks = max(1, (used + stream.chunkSize - 1) / stream.chunkSize)
            try Self.write(seal(current, chunks: chunks, byteCount: used, final: true), to: sink)
            used = 0
        }

        /// Copies the bytes past the batch in `current` to the start of `destination` (which may be
        /// `current`: the regions cannot overlap); returns their count.
        private func carryExtraChunk(into destination: SlotBuffer) -> Int {
            let extra = used - batchBytes
            destination.all.baseAddress!.copyMemory(from: current.all.baseAddress! + batchBytes, byteCount: extra)
            return extra
        }

        private func seal(_ buffer: SlotBuffer, chunks: Int, byteCount: Int, final: Bool) throws -> [Data] {
            defer { counter += UInt64(chunks) }
            return try Self.seal(stream, buffer, chunks: chunks, byteCount: byteCount, first: counter, final: final)
        }

        /// Seals the first `byteCount` bytes of `buffer` as `chunks` chunks on all cores, numbered
        /// from `first`; with `final`, the last one is marked final. Returns each `ciphertext || tag`.
        private static func seal(
            _ stream: STREAM, _ buffer: SlotBuffer, chunks: Int, byteCount: Int, first: UInt64, final: Bool
        ) throws -> [Data] {
            let boxes = ResultSlots<Result<Data, any Error>>(count: chunks, initialValue: .success(Data()))
            STREAM.parallel(chunks) { i in
                let start = i * stream.chunkSize
                let plaintext = UnsafeRawBufferPointer(
                    start: buffer.all.baseAddress! + start, count: min(stream.chunkSize, byteCount - start))
                boxes[i] = Result { try stream.seal(plaintext, counter: first + UInt64(i), final: final && i == chunks - 1) }
            }
            return try (0..<chunks).map { try boxes[$0].get() }
        }

        private static func write(_ boxes: [Data], to sink: (UnsafeRawBufferPointer) throws -> Void) throws {
            for box in boxes { try box.withUnsafeBytes { try sink($0) } }
        }
    }
}
