import Foundation

extension STREAM {
    /// Seals a stream. Plaintext collects in a buffer of `chunksPerBatch + 1` chunks; once a byte
    /// reaches the extra chunk, the chunks before it are known not to be final and are sealed on all
    /// cores, then written in order. `finish` seals the rest and marks the last chunk final (one
    /// empty final chunk for an empty stream).
    ///
    /// `encrypt(reading:writing:)` overlaps the stages: while the cores seal batch k, one turn of the
    /// same fork-join writes batch k-1 and reads batch k+1 into a second buffer. Memory stays near four
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
            current = SlotBuffer(slots: 1, slotSize: capacity, holdsPlaintext: true)
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
                current.noteWritten(upTo: used)
                offset += n
            }
        }

        /// Reads `read` to its end (a read of 0 bytes), seals everything and finishes the stream:
        /// the pipelined path. Each batch is one fork-join over the cores in which one turn writes
        /// the previous batch's sealed chunks and reads the next batch while the others seal.
        package func encrypt(
            reading read: (UnsafeMutableRawBufferPointer) throws -> Int, writing sink: (UnsafeRawBufferPointer) throws -> Void
        ) throws {
            precondition(!finished, "encrypt after finish")
            used = try Self.fill(current, from: used, read)
            var sealed = [Data]()
            while used > batchBytes {
                let next = spare ?? SlotBuffer(slots: 1, slotSize: capacity, holdsPlaintext: true)
                // The extra chunk is outside what the cores read: copying it first is safe.
                var nextUsed = carryExtraChunk(into: next)
                let boxes = ResultSlots<Result<Data, any Error>>(count: stream.chunksPerBatch, initialValue: .success(Data()))
                try ForkJoin.run(stream.chunksPerBatch, alongside: {
                    try Self.write(sealed, to: sink)
                    sealed = []
                    nextUsed = try Self.fill(next, from: nextUsed, read)
                }) { [stream, current, counter, batchBytes] i in
                    boxes[i] = Self.sealChunk(i, of: stream, current, byteCount: batchBytes, first: counter, lastIsFinal: false)
                }
                counter += UInt64(stream.chunksPerBatch)
                sealed = try boxes.values()
                used = nextUsed
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
            destination.noteWritten(upTo: extra)
            return extra
        }

        /// Reads into `buffer` from offset `start` until it is full or the input ends; returns the
        /// new count of bytes in it.
        private static func fill(_ buffer: SlotBuffer, from start: Int, _ read: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> Int {
            let end = try start + ReadLoop.fill(UnsafeMutableRawBufferPointer(rebasing: buffer.all[start...]), read)
            buffer.noteWritten(upTo: end)
            return end
        }

        /// Seals the first `byteCount` bytes of `buffer` as `chunks` chunks on all cores, numbered from
        /// the current counter; with `final`, the last one is marked final. Returns each `ciphertext || tag`.
        private func seal(_ buffer: SlotBuffer, chunks: Int, byteCount: Int, final: Bool) throws -> [Data] {
            let boxes = ResultSlots<Result<Data, any Error>>(count: chunks, initialValue: .success(Data()))
            ForkJoin.run(chunks) { [stream, counter] i in
                boxes[i] = Self.sealChunk(i, of: stream, buffer, byteCount: byteCount, first: counter, lastIsFinal: final && i == chunks - 1)
            }
            counter += UInt64(chunks)
            return try boxes.values()
        }

        /// `ciphertext || tag` of chunk `i` of the first `byteCount` bytes of `buffer`, numbered from
        /// `first`; `lastIsFinal` marks it final.
        private static func sealChunk(
            _ i: Int, of stream: STREAM, _ buffer: SlotBuffer, byteCount: Int, first: UInt64, lastIsFinal: Bool
        ) -> Result<Data, any Error> {
            let start = i * stream.chunkSize
            let plaintext = UnsafeRawBufferPointer(start: buffer.all.baseAddress! + start, count: min(stream.chunkSize, byteCount - start))
            return Result { try stream.seal(plaintext, counter: first + UInt64(i), final: lastIsFinal) }
        }

        private static func write(_ boxes: [Data], to sink: (UnsafeRawBufferPointer) throws -> Void) throws {
            for box in boxes { try box.withUnsafeBytes { try sink($0) } }
        }
    }
}
