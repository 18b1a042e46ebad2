import Crypto
import Foundation

/// The STREAM construction (Hoang, Reyhanitabar, Rogaway and Vizár, 2015) shared by the native
/// chunked format (`SFS1`, `StreamEnvelope`) and age's payload: plaintext cut into chunks of
/// `chunkSize` bytes (the last one shorter, never empty unless it is the only one), each sealed
/// with the AEAD under one key and the 12-byte nonce `counter (11 bytes, big-endian) || flag`,
/// where the flag byte is 1 on the final chunk and 0 elsewhere. Reordering, removing or adding
/// chunks, cutting the stream at a chunk boundary and appending bytes are all detected.
///
/// A value holds the parameters; `STREAM.Encryptor` and `STREAM.Decryptor` run the one I/O
/// pipeline (reading, sealing or opening on all cores, and writing overlap, in bounded memory).
/// Formats keep only their header, key schedule and error mapping.
package struct STREAM: Sendable {
    /// The chunk size of SFS1 and age: 64 KiB of plaintext.
    package static let defaultChunkSize = 1 << 16
    /// Chunks sealed or opened together on the cores: 2 MiB of plaintext per batch.
    package static let defaultChunksPerBatch = 32
    /// Bytes of the AEAD tag after each chunk's ciphertext.
    package static let tagByteCount = 16
    /// Bytes of a chunk nonce.
    package static let nonceByteCount = 12

    /// The AEAD sealing every chunk.
    package let algorithm: Envelope.Algorithm
    /// The 32-byte payload key.
    package let key: SymmetricKey
    /// Authenticated with every chunk (empty for age).
    package let associatedData: Data
    /// Plaintext bytes per chunk.
    package let chunkSize: Int
    /// Chunks per batch.
    package let chunksPerBatch: Int

    /// Bytes of a sealed full chunk: `chunkSize` plus the tag.
    package var sealedChunkSize: Int { chunkSize + Self.tagByteCount }

    /// A STREAM over `algorithm` and the 32-byte `key`; `associatedData` is bound to every chunk.
    package init(
        algorithm: Envelope.Algorithm, key: SymmetricKey, associatedData: Data = Data(),
        chunkSize: Int = defaultChunkSize, chunksPerBatch: Int = defaultChunksPerBatch
    ) {
        precondition(chunkSize > 0 && chunksPerBatch > 0)
        self.algorithm = algorithm
        self.key = key
        self.associatedData = associatedData
        self.chunkSize = chunkSize
        self.chunksPerBatch = chunksPerBatch
    }

    /// Writes the 12-byte nonce of chunk `counter` (`final` sets the last byte) at `destination`.
    package static func writeNonce(counter: UInt64, final: Bool, to destination: UnsafeMutableRawPointer) {
        memset(destination, 0, 3)
        withUnsafeBytes(of: counter.bigEndian) { destination.advanced(by: 3).copyMemory(from: $0.baseAddress!, byteCount: 8) }
        destination.storeBytes(of: final ? 1 : 0, toByteOffset: 11, as: UInt8.self)
    }

    /// The 12-byte nonce of chunk `counter`.
    package static func nonce(counter: UInt64, final: Bool) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: nonceByteCount)
        nonce.withUnsafeMutableBytes { writeNonce(counter: counter, final: final, to: $0.baseAddress!) }
        return nonce
    }

    /// `ciphertext || tag` of one chunk.
    func seal(_ plaintext: UnsafeRawBufferPointer, counter: UInt64, final: Bool) throws -> Data {
        let nonce = Self.nonce(counter: counter, final: final)
        switch algorithm {
        case .chaCha20Poly1305:
            let box = try ChaChaPoly.seal(plaintext, using: key, nonce: ChaChaPoly.Nonce(data: nonce), authenticating: associatedData)
            return box.combined.dropFirst(Self.nonceByteCount)
        case .aes256GCM:
            let box = try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(data: nonce), authenticating: associatedData)
            // `combined` is nil only for nonces other than 12 bytes.
            return box.combined!.dropFirst(Self.nonceByteCount)
        }
    }

    /// Where a sealed chunk starts in a decryption slot: 64-byte aligned (the kernel copies into
    /// misaligned buffers at a fraction of the speed), with its nonce in the 12 bytes before it.
    static let chunkOffsetInSlot = 64

    /// Bytes of a decryption slot: the offset, then a sealed full chunk, rounded to 64 bytes.
    var slotSize: Int { (Self.chunkOffsetInSlot + sealedChunkSize + 63) / 64 * 64 }

    /// Opens the sealed chunk of `length` bytes stored at `slot[chunkOffsetInSlot...]`, in place:
    /// the nonce is written into the 12 bytes before it. Nil when it does not authenticate with
    /// this counter and flag.
    func open(slot: UnsafeMutableRawBufferPointer, length: Int, counter: UInt64, final: Bool) -> Data? {
        Self.writeNonce(counter: counter, final: final, to: slot.baseAddress! + Self.chunkOffsetInSlot - Self.nonceByteCount)
        let combined = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: slot.baseAddress! + Self.chunkOffsetInSlot - Self.nonceByteCount),
                            count: Self.nonceByteCount + length, deallocator: .none)
        switch algorithm {
        case .chaCha20Poly1305:
            guard let box = try? ChaChaPoly.SealedBox(combined: combined) else { return nil }
            return try? ChaChaPoly.open(box, using: key, authenticating: associatedData)
        case .aes256GCM:
            guard let box = try? AES.GCM.SealedBox(combined: combined) else { return nil }
            return try? AES.GCM.open(box, using: key, authenticating: associatedData)
        }
    }
}

/// How a STREAM fails to open. Formats map these to their own errors. Plaintext of the chunks
/// before the failing one may already have been written; the failing chunk's never is.
package enum STREAMError: Error, Equatable, Sendable {
    /// The stream ends at a chunk boundary before its final chunk, or inside a chunk's first
    /// 16 bytes (too short to be a chunk).
    case truncated
    /// Bytes follow a full-size final chunk.
    case trailingData
    /// Chunk `chunk` (zero-based) does not authenticate under either flag: modified, wrong key or
    /// associated data, reordered, cut inside the chunk, or a short final chunk read together with
    /// bytes after it.
    case authenticationFailed(chunk: UInt64)
    /// A final chunk with no plaintext after earlier chunks (only an empty stream has one).
    case emptyFinalChunk
}
