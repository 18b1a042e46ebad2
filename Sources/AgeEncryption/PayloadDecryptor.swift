import Crypto
import Foundation
import SecureCore

/// Decrypts the STREAM payload batch by batch. A batch's chunks are opened in parallel; plaintext is
/// handed out only for chunks that authenticated, in order, and an error is raised only after the
/// chunks before it were handed out (as the specification and the testkit require).
final class PayloadDecryptor {
    private enum Outcome {
        case opened(Data, final: Bool)
        case failed(AgeError)
    }

    private let source: Age.ByteSource
    private let key: SymmetricKey
    private let slots = SlotBuffer(slots: Stream.batchChunks, slotSize: 12 + Stream.sealedChunkSize)
    private var counter: UInt64 = 0
    private var finished = false
    private var pendingError: AgeError?

    init(source: Age.ByteSource, key: SymmetricKey) {
        self.source = source
        self.key = key
    }

    /// The next authenticated plaintext chunks in order; empty once the payload ended correctly.
    func nextBatch() throws -> [Data] {
        if let pendingError { throw pendingError }
        if finished { return [] }
        var lengths = [Int](repeating: 0, count: Stream.batchChunks)
        var count = 0, reachedEnd = false
        while count < Stream.batchChunks {
            // Each chunk lands after 12 bytes reserved for its nonce, so it can be opened in place.
            let read = try source.readFully(into: UnsafeMutableRawBufferPointer(rebasing: slots.slot(count)[12...]))
            if read == 0 { reachedEnd = true; break }
            lengths[count] = read
            count += 1
            if read < Stream.sealedChunkSize { reachedEnd = true; break }
        }
        let outcomes = ResultSlots<Outcome>(count: count, initialValue: .failed(.truncated))
        defer { outcomes.deallocate() }
        let first = counter, slots = self.slots, key = self.key, chunkLengths = lengths
        Stream.parallel(count) { i in
            outcomes[i] = Self.open(slots.slot(i), length: chunkLengths[i], counter: first + UInt64(i), key: key)
        }
        var released = [Data]()
        for i in 0..<count {
            switch outcomes[i] {
            case .failed(let error):
                return try release(released, then: error)
            case .opened(let plaintext, let final):
                released.append(plaintext)
                guard final else { continue }
                finished = true
                if i < count - 1 || (!reachedEnd && hasMoreInput()) {
                    return try release(released, then: .trailingData)
                }
                return released
            }
        }
        counter += UInt64(count)
        if reachedEnd { return try release(released, then: .truncated) }
        return released
    }

    /// Returns `chunks` now and raises `error` on the next call (at once when there is nothing to return).
    private func release(_ chunks: [Data], then error: AgeError) throws -> [Data] {
        pendingError = error
        if chunks.isEmpty { throw error }
        return chunks
    }

    private func hasMoreInput() -> Bool {
        var byte: UInt8 = 0
        return ((try? withUnsafeMutableBytes(of: &byte) { try source.read(into: $0) }) ?? 0) > 0
    }

    private static func open(_ slot: UnsafeMutableRawBufferPointer, length: Int, counter: UInt64, key: SymmetricKey) -> Outcome {
        guard length >= Stream.tagSize else { return .failed(.payloadAuthenticationFailed(chunk: counter)) }
        if length == Stream.tagSize && counter != 0 { return .failed(.emptyFinalChunk) }
        // A full-length chunk is normally not the last; a shorter one can only be the last.
        if length == Stream.sealedChunkSize,
            let plaintext = open(slot, length: length, counter: counter, last: false, key: key)
        {
            return .opened(plaintext, final: false)
        }
        if let plaintext = open(slot, length: length, counter: counter, last: true, key: key) {
            return .opened(plaintext, final: true)
        }
        return .failed(.payloadAuthenticationFailed(chunk: counter))
    }

    private static func open(
        _ slot: UnsafeMutableRawBufferPointer, length: Int, counter: UInt64, last: Bool, key: SymmetricKey
    ) -> Data? {
        Stream.writeNonce(counter: counter, last: last, to: slot.baseAddress!)
        let combined = Data(bytesNoCopy: slot.baseAddress!, count: 12 + length, deallocator: .none)
        guard let box = try? ChaChaPoly.SealedBox(combined: combined) else { return nil }
        return try? ChaChaPoly.open(box, using: key)
    }
}
