import Crypto
import Dispatch
import Foundation

/// The native chunked format (`SFS1`) for data of any size in bounded memory: the envelope header,
/// then the plaintext in 64 KiB chunks, each sealed with its own nonce (the STREAM construction, as
/// in age), so truncation, reordering and trailing data are all detected. Layout in docs/FORMATS.md.
///
/// Chunks are sealed and opened in batches on all cores; output is written in order. Decrypted
/// plaintext is written only after its chunk authenticated, but a failing stream may already have
/// written earlier chunks: use `FileEncryption` for all-or-nothing files.
public enum StreamEnvelope {
    /// Plaintext bytes per chunk.
    public static let chunkSize = 1 << 16
    static let magic: [UInt8] = Array("SFS1".utf8)
    static let chunkSizeLog2: UInt8 = 16
    static let streamSaltByteCount = 16
    static let payloadInfo = Data("SecureFoundation SFS1 payload".utf8)
    /// Chunks per batch: 2 MiB of plaintext, enough to keep two cores busy between writes.
    static let chunksPerBatch = 32

    // MARK: Encrypting

    /// Reads `input` to its end and writes the sealed stream to `output`, under a 32-byte key.
    public static func encrypt(
        from input: borrowing FileInput, to output: borrowing FileOutput, key: SymmetricKey,
        algorithm: Envelope.Algorithm = .aes256GCM, context: some DataProtocol = Data()
    ) throws {
        guard key.bitCount == Envelope.keyByteCount * 8 else {
            throw SecureCoreError.invalidParameter("key must be \(Envelope.keyByteCount) bytes")
        }
        let header = try makeHeader(algorithm: algorithm, kdf: nil, salt: Data())
        try encrypt(from: input, to: output, header: header, masterKey: key, context: context)
    }

    /// Reads `input` to its end and writes the sealed stream to `output`, under a passphrase.
    public static func encrypt<S: DataProtocol>(
        from input: borrowing FileInput, to output: borrowing FileOutput, passphrase: S,
        kdf: PasswordKDF = .default, algorithm: Envelope.Algorithm = .aes256GCM, context: some DataProtocol = Data()
    ) throws {
        if case .pbkdf2(let hash, _) = kdf, hash != .sha256 {
            throw SecureCoreError.invalidParameter("the stream format stores PBKDF2 with HMAC-SHA256 only")
        }
        let salt = SecureRandom.bytes(count: Envelope.saltByteCount)
        let header = try makeHeader(algorithm: algorithm, kdf: kdf, salt: salt)
        let key = try kdf.deriveKey(from: passphrase, salt: salt, limits: .unlimited)
        try encrypt(from: input, to: output, header: header, masterKey: key.symmetricKey, context: context)
    }

    private static func encrypt(
        from input: borrowing FileInput, to output: borrowing FileOutput, header: StreamHeader,
        masterKey: SymmetricKey, context: some DataProtocol
    ) throws {
        try output.write(header.encoded)
        let sealer = ChunkSealer(header: header, masterKey: masterKey, context: Data(context))
        try forEachBatch(of: input, chunkSize: chunkSize) { chunks, firstIndex, isFinal in
            for chunk in try sealer.seal(chunks, firstIndex: firstIndex, lastIsFinal: isFinal) { try output.write(chunk) }
        }
    }

    // MARK: Decrypting

    /// Reads a sealed stream from `input` and writes the plaintext to `output`, under a raw key.
    public static func decrypt(
        from input: borrowing FileInput, to output: borrowing FileOutput, key: SymmetricKey,
        context: some DataProtocol = Data()
    ) throws {
        let header = try readHeader(from: input)
        guard header.envelope.kdf == nil else {
            throw SecureCoreError.invalidParameter("this stream is sealed with a passphrase, not a raw key")
        }
        try decrypt(from: input, to: output, header: header, masterKey: key, context: context)
    }

    /// Reads a sealed stream from `input` and writes the plaintext to `output`, under a passphrase.
    /// KDF parameters above `limits` are rejected before any KDF work.
    public static func decrypt<S: DataProtocol>(
        from input: borrowing FileInput, to output: borrowing FileOutput, passphrase: S,
        context: some DataProtocol = Data(), limits: KDFLimits = .default
    ) throws {
        let header = try readHeader(from: input)
        guard let kdf = header.envelope.kdf else {
            throw SecureCoreError.invalidParameter("this stream is sealed with a raw key, not a passphrase")
        }
        let key = try kdf.deriveKey(from: passphrase, salt: header.envelope.salt, limits: limits)
        try decrypt(from: input, to: output, header: header, masterKey: key.symmetricKey, context: context)
    }

    private static func decrypt(
        from input: borrowing FileInput, to output: borrowing FileOutput, header: StreamHeader,
        masterKey: SymmetricKey, context: some DataProtocol
    ) throws {
        guard masterKey.bitCount == Envelope.keyByteCount * 8 else {
            throw SecureCoreError.invalidParameter("key must be \(Envelope.keyByteCount) bytes")
        }
        let sealer = ChunkSealer(header: header, masterKey: masterKey, context: Data(context))
        try forEachBatch(of: input, chunkSize: chunkSize + AEAD.tagByteCount) { chunks, firstIndex, isFinal in
            let result = sealer.open(chunks, firstIndex: firstIndex, lastIsFinal: isFinal)
            for chunk in result.plaintexts { try output.write(chunk) }
            if let failure = result.failure { throw failure }
        }
    }

    /// Reads `input` to its end in batches of `chunksPerBatch` pieces of `chunkSize` bytes (the last
    /// piece may be shorter, and an empty input is one empty piece) and calls `body` with each batch,
    /// the index of its first piece, and whether it is the final batch. Reading one batch ahead is
    /// what tells the final batch apart: it is the one nothing follows.
    private static func forEachBatch(
        of input: borrowing FileInput, chunkSize: Int, _ body: ([Data], UInt64, Bool) throws -> Void
    ) throws {
        let batchBytes = chunkSize * chunksPerBatch
        var current = try input.read(upTo: batchBytes)
        var firstIndex: UInt64 = 0
        while true {
            let next = current.count == batchBytes ? try input.read(upTo: batchBytes) : Data()
            let pieces = stride(from: 0, to: max(current.count, 1), by: chunkSize).map {
                current[current.startIndex + $0..<current.startIndex + min($0 + chunkSize, current.count)]
            }
            try body(pieces, firstIndex, next.isEmpty)
            if next.isEmpty { return }
            firstIndex += UInt64(pieces.count)
            current = next
        }
    }

    // MARK: Header

    struct StreamHeader {
        let envelope: Envelope.Header
        let streamSalt: Data
        let encoded: Data
    }

    private static func makeHeader(algorithm: Envelope.Algorithm, kdf: PasswordKDF?, salt: Data) throws -> StreamHeader {
        let envelope = try Envelope.encodeHeader(algorithm: algorithm, kdf: kdf, salt: salt, magic: magic)
        let streamSalt = SecureRandom.bytes(count: streamSaltByteCount)
        var encoded = envelope.encoded
        encoded.append(chunkSizeLog2)
        encoded.append(streamSalt)
        return StreamHeader(envelope: envelope, streamSalt: streamSalt, encoded: encoded)
    }

    /// Reads exactly the header bytes from `input` (it is self-delimiting) and parses them.
    static func readHeader(from input: borrowing FileInput) throws -> StreamHeader {
        var bytes = try input.read(upTo: 6)
        if bytes.count == 6 {
            switch bytes.last! {
            case 0x01: bytes.append(try input.read(upTo: 3 + Envelope.saltByteCount))
            case 0x02: bytes.append(try input.read(upTo: 4 + Envelope.saltByteCount))
            default: break
            }
        }
        let envelope = try Envelope.parseHeader(bytes, magic: magic)
        let rest = try input.read(upTo: 1 + streamSaltByteCount)
        guard rest.count == 1 + streamSaltByteCount else { throw SecureCoreError.truncated }
        guard rest.first == chunkSizeLog2 else {
            throw SecureCoreError.invalidParameter("unsupported chunk size 2^\(rest.first!)")
        }
        return StreamHeader(envelope: envelope, streamSalt: Data(rest.dropFirst()), encoded: bytes + rest)
    }
}

/// Seals and opens batches of chunks in parallel with the per-stream payload key.
private struct ChunkSealer: Sendable {
    let algorithm: Envelope.Algorithm
    let payloadKey: SymmetricKey
    let associatedData: Data

    init(header: StreamEnvelope.StreamHeader, masterKey: SymmetricKey, context: Data) {
        algorithm = header.envelope.algorithm
        // A fresh salt per stream gives each stream its own payload key, so counter nonces never repeat.
        payloadKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: masterKey, salt: header.streamSalt, info: StreamEnvelope.payloadInfo, outputByteCount: 32)
        associatedData = header.encoded + context
    }

    /// The 12-byte nonce of chunk `index`: an 11-byte big-endian counter and a final-chunk flag.
    static func nonce(_ index: UInt64, final: Bool) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: 12)
        withUnsafeBytes(of: index.bigEndian) { nonce.replaceSubrange(3..<11, with: $0) }
        nonce[11] = final ? 1 : 0
        return nonce
    }

    func seal(_ chunks: [Data], firstIndex: UInt64, lastIsFinal: Bool) throws -> [Data] {
        let slots = Slots<Result<Data, Error>>(count: chunks.count)
        DispatchQueue.concurrentPerform(iterations: chunks.count) { i in
            let final = lastIsFinal && i == chunks.count - 1
            slots[i] = Result {
                var out = Data(capacity: chunks[i].count + AEAD.tagByteCount)
                try AEAD.seal(
                    algorithm, chunks[i], key: payloadKey, nonce: Self.nonce(firstIndex + UInt64(i), final: final),
                    authenticating: associatedData, appendingTo: &out)
                return out
            }
        }
        return try slots.values.map { try $0!.get() }
    }

    /// Opens a batch; returns the plaintexts of the chunks before the first failure, and that failure.
    func open(_ chunks: [Data], firstIndex: UInt64, lastIsFinal: Bool) -> (plaintexts: [Data], failure: Error?) {
        let slots = Slots<Result<Data, Error>>(count: chunks.count)
        DispatchQueue.concurrentPerform(iterations: chunks.count) { i in
            let expectFinal = lastIsFinal && i == chunks.count - 1
            slots[i] = Result { try openChunk(chunks[i], index: firstIndex + UInt64(i), expectFinal: expectFinal) }
        }
        var plaintexts = [Data]()
        for slot in slots.values {
            switch slot! {
            case .success(let plaintext): plaintexts.append(plaintext)
            case .failure(let error): return (plaintexts, error)
            }
        }
        return (plaintexts, nil)
    }

    private func openChunk(_ chunk: Data, index: UInt64, expectFinal: Bool) throws -> Data {
        guard chunk.count >= AEAD.tagByteCount else { throw SecureCoreError.truncated }
        do {
            let plaintext = try AEAD.open(
                algorithm, chunk, key: payloadKey, nonce: Self.nonce(index, final: expectFinal), authenticating: associatedData)
            if expectFinal, plaintext.isEmpty, index > 0 {
                throw SecureCoreError.malformedEncoding("stream: empty final chunk after data")
            }
            return plaintext
        } catch SecureCoreError.authenticationFailed {
            // Tell truncation (a non-final chunk at the end) and trailing data (a final chunk
            // followed by more) apart from tampering.
            let opensWithOtherFlag = (try? AEAD.open(
                algorithm, chunk, key: payloadKey, nonce: Self.nonce(index, final: !expectFinal),
                authenticating: associatedData)) != nil
            if opensWithOtherFlag { throw expectFinal ? SecureCoreError.truncated : SecureCoreError.trailingData }
            throw SecureCoreError.authenticationFailed
        }
    }
}

/// Fixed-size result slots written concurrently, each index by exactly one task, and read only
/// after `concurrentPerform` returns (which orders those writes before the reads). The buffer is
/// allocated once, so concurrent writes to distinct indices never touch shared bookkeeping.
final class Slots<Value>: @unchecked Sendable {
    private let storage: UnsafeMutableBufferPointer<Value?>

    init(count: Int) {
        storage = .allocate(capacity: count)
        storage.initialize(repeating: nil)
    }

    deinit {
        storage.deinitialize()
        storage.deallocate()
    }

    subscript(index: Int) -> Value? {
        get { storage[index] }
        set { storage[index] = newValue }
    }

    var values: [Value?] { Array(storage) }
}
