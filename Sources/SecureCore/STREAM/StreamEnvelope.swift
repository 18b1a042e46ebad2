import Crypto
import Foundation

/// The native chunked format (`SFS1`) for data of any size in bounded memory: the envelope header,
/// then the plaintext in 64 KiB chunks, each sealed with its own nonce (the STREAM construction, as
/// in age), so truncation, reordering and trailing data are all detected. Layout in docs/FORMATS.md.
///
/// Chunks are sealed and opened by SecureCore's one STREAM engine (shared with age), in batches on
/// all cores, with reading and writing overlapped; output is written in order. Decrypted plaintext
/// is written only after its chunk authenticated, but a failing stream may already have written
/// earlier chunks: use `FileEncryption` for all-or-nothing files.
///
/// Failures: a stream cut at a chunk boundary (or fewer than 16 bytes into a chunk) is
/// `SecureCoreError.truncated`; bytes after a full final chunk are `.trailingData`; a modified,
/// reordered or cut chunk, a wrong key or context, or a short final chunk with bytes after it (read
/// together with them, as in age) is `.authenticationFailed`.
public enum StreamEnvelope {
    /// Plaintext bytes per chunk.
    public static let chunkSize = STREAM.defaultChunkSize
    static let magic: [UInt8] = Array("SFS1".utf8)
    static let chunkSizeLog2: UInt8 = 16
    static let streamSaltByteCount = 16
    static let payloadInfo = Data("SecureFoundation SFS1 payload".utf8)
    /// Chunks per batch: 2 MiB of plaintext, enough to keep two cores busy between writes.
    static let chunksPerBatch = STREAM.defaultChunksPerBatch

    // MARK: Encrypting

    /// Reads `input` to its end and writes the sealed stream to `output`, under a 32-byte key.
    /// Throws `SecureCoreError`: `invalidParameter` for a key that is not 32 bytes, `.io` from the input or output.
    public static func encrypt(
        from input: borrowing FileInput, to output: borrowing FileOutput, key: SymmetricKey,
        algorithm: Envelope.Algorithm = .aes256GCM, context: some DataProtocol = Data()
    ) throws(SecureCoreError) {
        guard key.bitCount == Envelope.keyByteCount * 8 else {
            throw SecureCoreError.invalidParameter("key must be \(Envelope.keyByteCount) bytes")
        }
        let header = try makeHeader(algorithm: algorithm, kdf: nil, salt: Data())
        try encrypt(from: input, to: output, header: header, masterKey: key, context: context)
    }

    /// Reads `input` to its end and writes the sealed stream to `output`, under a passphrase.
    /// Throws `SecureCoreError`: `invalidParameter` for KDF parameters the format cannot store, KDF errors, `.io`.
    public static func encrypt<S: DataProtocol>(
        from input: borrowing FileInput, to output: borrowing FileOutput, passphrase: S,
        kdf: PasswordKDF = .default, algorithm: Envelope.Algorithm = .aes256GCM, context: some DataProtocol = Data()
    ) throws(SecureCoreError) {
        if case .pbkdf2(let hash, _) = kdf, hash != .sha256 {
            throw SecureCoreError.invalidParameter("the stream format stores PBKDF2 with HMAC-SHA256 only")
        }
        let salt = SecureRandom.bytes(count: Envelope.saltByteCount)
        let header = try makeHeader(algorithm: algorithm, kdf: kdf, salt: salt)
        // The readers' default ceiling, as Envelope.seal: nothing is written that they would refuse.
        let key = try kdf.deriveKey(from: passphrase, salt: salt, limits: .default)
        try encrypt(from: input, to: output, header: header, masterKey: key.symmetricKey, context: context)
    }

    private static func encrypt(
        from input: borrowing FileInput, to output: borrowing FileOutput, header: StreamHeader,
        masterKey: SymmetricKey, context: some DataProtocol
    ) throws(SecureCoreError) {
        try output.write(header.encoded)
        let encryptor = STREAM.Encryptor(stream(header: header, masterKey: masterKey, context: context))
        do {
            try encryptor.encrypt(reading: { try input.read(into: $0) }, writing: { try output.write($0) })
        } catch {
            throw SecureCoreError(stream: error)
        }
    }

    // MARK: Decrypting

    /// Reads a sealed stream from `input` and writes the plaintext to `output`, under a raw key.
    /// Throws `SecureCoreError`: see the type's failures, `secretKindMismatch` for a passphrase stream, `.io`.
    public static func decrypt(
        from input: borrowing FileInput, to output: borrowing FileOutput, key: SymmetricKey,
        context: some DataProtocol = Data()
    ) throws(SecureCoreError) {
        let header = try readHeader(from: input)
        guard header.envelope.kdf == nil else {
            throw SecureCoreError.secretKindMismatch(sealedWith: .passphrase)
        }
        try decrypt(from: input, to: output, header: header, masterKey: key, context: context)
    }

    /// Reads a sealed stream from `input` and writes the plaintext to `output`, under a passphrase.
    /// KDF parameters above `limits` are rejected before any KDF work.
    /// Throws `SecureCoreError`: see the type's failures, `costAboveCeiling`, `secretKindMismatch` for a raw-key stream, `.io`.
    public static func decrypt<S: DataProtocol>(
        from input: borrowing FileInput, to output: borrowing FileOutput, passphrase: S,
        context: some DataProtocol = Data(), limits: KDFLimits = .default
    ) throws(SecureCoreError) {
        let header = try readHeader(from: input)
        guard let kdf = header.envelope.kdf else {
            throw SecureCoreError.secretKindMismatch(sealedWith: .rawKey)
        }
        let key = try kdf.deriveKey(from: passphrase, salt: header.envelope.salt, limits: limits)
        try decrypt(from: input, to: output, header: header, masterKey: key.symmetricKey, context: context)
    }

    private static func decrypt(
        from input: borrowing FileInput, to output: borrowing FileOutput, header: StreamHeader,
        masterKey: SymmetricKey, context: some DataProtocol
    ) throws(SecureCoreError) {
        guard masterKey.bitCount == Envelope.keyByteCount * 8 else {
            throw SecureCoreError.invalidParameter("key must be \(Envelope.keyByteCount) bytes")
        }
        let decryptor = STREAM.Decryptor(stream(header: header, masterKey: masterKey, context: context))
        do {
            try decryptor.decrypt(reading: { try input.read(into: $0) }, writing: { try output.write($0) })
        } catch {
            throw SecureCoreError(stream: error)
        }
    }

    /// The STREAM of this header: its algorithm, the payload key (HKDF-SHA256 of the master key
    /// with the header's stream salt: a fresh salt per stream gives each stream its own key, so
    /// counter nonces never repeat), and the header and context as associated data.
    static func stream(header: StreamHeader, masterKey: SymmetricKey, context: some DataProtocol) -> STREAM {
        let payloadKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: masterKey, salt: header.streamSalt, info: payloadInfo, outputByteCount: 32)
        return STREAM(
            algorithm: header.envelope.algorithm, key: payloadKey, associatedData: header.encoded + Data(context),
            chunkSize: chunkSize, chunksPerBatch: chunksPerBatch)
    }

    // MARK: Header

    struct StreamHeader {
        let envelope: Envelope.Header
        let streamSalt: Data
        let encoded: Data
    }

    private static func makeHeader(algorithm: Envelope.Algorithm, kdf: PasswordKDF?, salt: Data) throws(SecureCoreError) -> StreamHeader {
        let envelope = try Envelope.encodeHeader(algorithm: algorithm, kdf: kdf, salt: salt, magic: magic)
        let streamSalt = SecureRandom.bytes(count: streamSaltByteCount)
        var encoded = envelope.encoded
        encoded.append(chunkSizeLog2)
        encoded.append(streamSalt)
        return StreamHeader(envelope: envelope, streamSalt: streamSalt, encoded: encoded)
    }

    /// Reads exactly the header bytes from `input` (it is self-delimiting) and parses them.
    static func readHeader(from input: borrowing FileInput) throws(SecureCoreError) -> StreamHeader {
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

extension SecureCoreError {
    /// SFS1's report of a STREAM failure.
    init(_ error: STREAMError) {
        switch error {
        case .truncated: self = .truncated
        case .trailingData: self = .trailingData
        case .authenticationFailed: self = .authenticationFailed
        case .emptyFinalChunk: self = .malformedEncoding("stream: empty final chunk after data")
        }
    }

    /// What the STREAM engine threw, as SFS1 reports it. The engine's entry points are untyped
    /// (`STREAMError`, what the I/O closures throw, which here is `SecureCoreError`, or
    /// swift-crypto's error when sealing under a key it refuses).
    init(stream error: any Error) {
        switch error {
        case let error as SecureCoreError: self = error
        case let error as STREAMError: self.init(error)
        default: self = .invalidParameter("the payload key cannot seal a chunk")
        }
    }
}
