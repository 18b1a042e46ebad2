import Foundation

extension STREAM {
    /// Opens a stream batch by batch: the chunks of a batch are opened on all cores, and plaintext is
    /// handed out only for chunks that authenticated, in order. An error is raised only after the
    /// chunks before it were handed out.
    ///
    /// The one reporting rule, for every format on this engine:
    /// - the input ends at a chunk boundary before a final chunk, or fewer than 16 bytes into a
    ///   chunk: `STREAMError.truncated`;
    /// - bytes follow a full-size final chunk: `.trailingData`, after that chunk's plaintext;
    /// - a chunk that authenticates under neither flag (modified, reordered, wrong key or associated
    ///   data, cut inside the chunk, or a short final chunk with bytes after it in the same read):
    ///   `.authenticationFailed(chunk:)`, with none of its plaintext. A short final chunk followed by
    ///   junk is not told apart from a modified chunk, as in age: finding where such a chunk ends
    ///   would mean trying every split of the last piece (about 2 GB of AEAD work for 64 KiB), a
    ///   cost any forged file could impose;
    /// - an empty final chunk after data: `.emptyFinalChunk`.
    ///
    /// `decrypt(reading:writing:)` overlaps the stages: while the cores open batch k, one turn of the
    /// same fork-join writes the plaintext of batch k-1 and reads batch k+1 into a second buffer.
    /// The slots hold only ciphertext, so they are not wiped; the second one is allocated only when
    /// a stream has a second batch.
    package final class Decryptor {
        /// One sealed chunk after opening.
        enum Outcome {
            /// Authenticated, with its flag.
            case opened(Data, final: Bool)
            /// Authenticates under neither flag.
            case failed
            /// Shorter than a tag: the input was cut.
            case tooShort
        }

        /// A batch read from the input: `lengths[i]` bytes in slot i, `reachedEnd` when the input ended.
        struct Batch {
            var lengths: [Int]
            var reachedEnd: Bool
        }

        private let stream: STREAM
        private var current: SlotBuffer
        private var spare: SlotBuffer?
        private var counter: UInt64 = 0
        private var finished = false
        /// The failure that ended the stream, thrown again by every later call.
        private var pendingError: (any Error)?

        /// A decryptor starting at chunk 0.
        package init(_ stream: STREAM) {
            self.stream = stream
            // Each chunk lands aligned, after room for its nonce, so it can be opened in place.
            current = Self.slots(for: stream)
        }

        /// The next authenticated plaintext chunks in order; empty once the stream ended correctly.
        /// Throws `STREAMError` (after handing out the chunks before the failure), or what `read` throws.
        package func nextBatch(reading read: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> [Data] {
            if let pendingError { throw pendingError }
            if finished { return [] }
            do {
                return try openNextBatch(reading: read)
            } catch {
                pendingError = error
                throw error
            }
        }

        private func openNextBatch(reading read: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> [Data] {
            let batch = try readBatch(into: current, read)
            let outcomes = Self.open(stream, current, batch, first: counter)
            // Whether anything follows the final chunk: one more read, whose failure (an armor
            // error after the last line, an I/O error) is the stream's, as on the pipelined path.
            let (plaintexts, error) = try resolve(outcomes, batch) {
                var byte: UInt8 = 0
                return try withUnsafeMutableBytes(of: &byte) { try read($0) } > 0
            }
            guard let error else { return plaintexts }
            pendingError = error
            if plaintexts.isEmpty { throw error }
            return plaintexts
        }

        /// Reads `read` to its end and writes all the plaintext to `sink`: the pipelined path.
        /// Throws `STREAMError`, or what `read` or `sink` throw; plaintext of the chunks before a
        /// failure has been written.
        package func decrypt(
            reading read: (UnsafeMutableRawBufferPointer) throws -> Int, writing sink: (UnsafeRawBufferPointer) throws -> Void
        ) throws {
            if let pendingError { throw pendingError }
            if finished { return }
            do {
                try decryptRest(reading: read, writing: sink)
            } catch {
                pendingError = error
                throw error
            }
        }

        private func decryptRest(
            reading read: (UnsafeMutableRawBufferPointer) throws -> Int, writing sink: (UnsafeRawBufferPointer) throws -> Void
        ) throws {
            var batch = try readBatch(into: current, read)
            var authenticated = [Data]()
            while true {
                let next = batch.reachedEnd ? nil : spare ?? Self.slots(for: stream)
                var nextBatch = Batch(lengths: [], reachedEnd: true)
                let outcomes = ResultSlots<Outcome>(count: batch.lengths.count, initialValue: .failed)
                try ForkJoin.run(batch.lengths.count, alongside: {
                    for chunk in authenticated { try chunk.withUnsafeBytes { try sink($0) } }
                    authenticated = []
                    if let next { nextBatch = try readBatch(into: next, read) }
                }) { [stream, current, batch, counter] i in
                    outcomes[i] = Self.open(i, of: stream, current, batch, first: counter)
                }
                let (plaintexts, error) = resolve(outcomes, batch) { !nextBatch.lengths.isEmpty }
                if let error {
                    pendingError = error
                    for chunk in plaintexts { try chunk.withUnsafeBytes { try sink($0) } }
                    throw error
                }
                if finished {
                    for chunk in plaintexts { try chunk.withUnsafeBytes { try sink($0) } }
                    return
                }
                authenticated = plaintexts
                if let next {
                    spare = current
                    current = next
                }
                batch = nextBatch
            }
        }

        /// Slots for one batch of `stream`: each chunk lands aligned, after room for its nonce, so
        /// it can be opened in place.
        private static func slots(for stream: STREAM) -> SlotBuffer {
            SlotBuffer(slots: stream.chunksPerBatch, slotSize: stream.slotSize, holdsPlaintext: false)
        }

        /// Reads up to `chunksPerBatch` sealed chunks into the slots of `buffer`, stopping after a
        /// short one (the input ended).
        private func readBatch(into buffer: SlotBuffer, _ read: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> Batch {
            var batch = Batch(lengths: [], reachedEnd: false)
            while batch.lengths.count < stream.chunksPerBatch {
                let slot = buffer.slot(batch.lengths.count)
                let chunk = slot[STREAM.chunkOffsetInSlot..<STREAM.chunkOffsetInSlot + stream.sealedChunkSize]
                let n = try ReadLoop.fill(UnsafeMutableRawBufferPointer(rebasing: chunk), read)
                if n == 0 {
                    batch.reachedEnd = true
                    break
                }
                batch.lengths.append(n)
                if n < stream.sealedChunkSize {
                    batch.reachedEnd = true
                    break
                }
            }
            return batch
        }

        /// Opens the chunks of `batch` on all cores, numbered from `first`.
        private static func open(_ stream: STREAM, _ buffer: SlotBuffer, _ batch: Batch, first: UInt64) -> ResultSlots<Outcome> {
            let outcomes = ResultSlots<Outcome>(count: batch.lengths.count, initialValue: .failed)
            ForkJoin.run(batch.lengths.count) { i in outcomes[i] = open(i, of: stream, buffer, batch, first: first) }
            return outcomes
        }

        /// Opens chunk `i` of `batch`, numbered `first + i`.
        private static func open(_ i: Int, of stream: STREAM, _ buffer: SlotBuffer, _ batch: Batch, first: UInt64) -> Outcome {
            let slot = buffer.slot(i), length = batch.lengths[i], counter = first + UInt64(i)
            if length < STREAM.tagByteCount { return .tooShort }
            // A full chunk is normally not the final one; a short one can only be final.
            if length == stream.sealedChunkSize, let plaintext = stream.open(slot: slot, length: length, counter: counter, final: false) {
                return .opened(plaintext, final: false)
            }
            if let plaintext = stream.open(slot: slot, length: length, counter: counter, final: true) {
                return .opened(plaintext, final: true)
            }
            return .failed
        }

        /// Applies the reporting rule to a batch in order: the plaintexts to hand out and the error
        /// to raise after them, if any. Marks the stream finished at its final chunk.
        /// `moreInput` tells whether anything follows the batch (asked only when it matters).
        private func resolve(
            _ outcomes: ResultSlots<Outcome>, _ batch: Batch, moreInput: () throws -> Bool
        ) rethrows -> ([Data], STREAMError?) {
            var plaintexts = [Data]()
            let first = counter
            counter += UInt64(outcomes.count)
            for i in 0..<outcomes.count {
                let index = first + UInt64(i)
                switch outcomes[i] {
                case .tooShort:
                    finished = true
                    return (plaintexts, .truncated)
                case .failed:
                    finished = true
                    return (plaintexts, .authenticationFailed(chunk: index))
                case .opened(let plaintext, let final):
                    guard final else {
                        plaintexts.append(plaintext)
                        continue
                    }
                    finished = true
                    if plaintext.isEmpty && index > 0 { return (plaintexts, .emptyFinalChunk) }
                    plaintexts.append(plaintext)
                    if try i < outcomes.count - 1 || (!batch.reachedEnd && moreInput()) { return (plaintexts, .trailingData) }
                    return (plaintexts, nil)
                }
            }
            if batch.reachedEnd {
                finished = true
                return (plaintexts, .truncated)
            }
            return (plaintexts, nil)
        }
    }
}
