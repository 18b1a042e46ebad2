import Crypto
import Foundation

/// The native sealed-data format, version 1 (`SFE1`): an AEAD ciphertext with a header that names
/// the algorithm and, for passphrases, the KDF and its parameters. The header is authenticated as
/// associated data together with the caller's optional context. Layout in docs/FORMATS.md.
///
/// Each call uses a fresh random nonce, so one key can seal up to 2^32 messages safely.
public enum Envelope {
    /// The AEAD used for the body.
    public enum Algorithm: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        /// AES-256-GCM (default; hardware accelerated on x86-64 and ARMv8).
        case aes256GCM = 0x01
        /// ChaCha20-Poly1305 (constant time without AES instructions).
        case chaCha20Poly1305 = 0x02

        /// The AEAD's name as the CLI spells it (`aes-256-gcm`, `chacha20-poly1305`).
        public var description: String { self == .aes256GCM ? "aes-256-gcm" : "chacha20-poly1305" }
    }

    /// Raw keys are 32 bytes.
    public static let keyByteCount = 32
    static let magic: [UInt8] = Array("SFE1".utf8)
    static let saltByteCount = 16

    /// What a header says, readable without a key.
    public struct Header: Sendable, Equatable {
        /// The AEAD sealing the body.
        public let algorithm: Algorithm
        /// The passphrase KDF, or nil for a raw-key envelope.
        public let kdf: PasswordKDF?
        /// The KDF salt (16 bytes), or empty for a raw-key envelope.
        public let salt: Data
        /// The encoded header bytes (authenticated as associated data).
        let encoded: Data
    }

    // MARK: Sealing

    /// Seals `plaintext` under a 32-byte raw key.
    /// Throws `SecureCoreError.invalidParameter` when the key is not 32 bytes.
    public static func seal<P: DataProtocol>(
        _ plaintext: P, key: SymmetricKey, algorithm: Algorithm = .aes256GCM, context: some DataProtocol = Data()
    ) throws(SecureCoreError) -> Data {
        guard key.bitCount == keyByteCount * 8 else {
            throw SecureCoreError.invalidParameter("key must be \(keyByteCount) bytes")
        }
        return try seal(plaintext, key: key, header: encodeHeader(algorithm: algorithm, kdf: nil, salt: Data()), context: context)
    }

    /// Seals `plaintext` under a 32-byte raw key held as `SecretBytes`.
    /// Throws `SecureCoreError.invalidParameter` when the key is not 32 bytes.
    public static func seal<P: DataProtocol>(
        _ plaintext: P, key: SecretBytes, algorithm: Algorithm = .aes256GCM, context: some DataProtocol = Data()
    ) throws(SecureCoreError) -> Data {
        try seal(plaintext, key: key.symmetricKey, algorithm: algorithm, context: context)
    }

    /// Seals `plaintext` under a key derived from `passphrase` with `kdf` and a fresh random salt.
    /// Throws `SecureCoreError.invalidParameter` for KDF parameters the format cannot store,
    /// `costAboveCeiling` for a cost above `KDFLimits.default` (which readers apply; checked before
    /// any work), `outOfMemory` from the KDF.
    public static func seal<P: DataProtocol, S: DataProtocol>(
        _ plaintext: P, passphrase: S, kdf: PasswordKDF = .default, algorithm: Algorithm = .aes256GCM,
        context: some DataProtocol = Data()
    ) throws(SecureCoreError) -> Data {
        if case .pbkdf2(let hash, _) = kdf, hash != .sha256 {
            throw SecureCoreError.invalidParameter("the envelope format stores PBKDF2 with HMAC-SHA256 only")
        }
        let salt = SecureRandom.bytes(count: saltByteCount)
        let header = try encodeHeader(algorithm: algorithm, kdf: kdf, salt: salt)
        // The readers' default ceiling: nothing is written that a default reader would refuse (a
        // 4,294,967,295-round PBKDF2 took 25 minutes to write a file nobody opens).
        let key = try kdf.deriveKey(from: passphrase, salt: salt, limits: .default)
        return try seal(plaintext, key: key.symmetricKey, header: header, context: context)
    }

    private static func seal<P: DataProtocol>(
        _ plaintext: P, key: SymmetricKey, header: Header, context: some DataProtocol
    ) throws(SecureCoreError) -> Data {
        try context.withContiguousBytes { (context) throws(SecureCoreError) in
            try seal(plaintext, key: key, header: header, nonce: nil, context: context)
        }
    }

    /// `header || nonce || ciphertext || tag`: how every envelope is sealed (`nonce` nil: a fresh
    /// random one from swift-crypto; a batch sealer passes its own, drawn in blocks).
    static func seal(
        _ plaintext: some DataProtocol, key: SymmetricKey, header: Header, nonce: UnsafeRawBufferPointer?, context: UnsafeRawBufferPointer
    ) throws(SecureCoreError) -> Data {
        let combined = try withAssociatedData(header: header, context: context) { (ad) throws(SecureCoreError) in
            try AEAD.seal(header.algorithm, plaintext, key: key, nonce: nonce, authenticating: ad)
        }
        return envelope(header: header, combined: combined)
    }

    /// `header || nonce || ciphertext || tag`, from swift-crypto's combined form (one allocation).
    private static func envelope(header: Header, combined: Data) -> Data {
        var output = Data(count: header.encoded.count + combined.count)
        // Through `withUnsafeBytes`: `DataProtocol.copyBytes(to:)` costs thousands of instructions a call.
        output.withUnsafeMutableBytes { output in
            header.encoded.withUnsafeBytes { output.copyMemory(from: $0) }
            combined.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: output[header.encoded.count...]).copyMemory(from: $0) }
        }
        return output
    }

    // MARK: Opening

    /// Opens a raw-key envelope. Throws `authenticationFailed` for a wrong key or context or any
    /// modification, and a specific error for a malformed header.
    public static func open<E: DataProtocol>(_ envelope: E, key: SymmetricKey, context: some DataProtocol = Data()) throws(SecureCoreError) -> Data {
        let bytes = contiguous(envelope)
        let header = try parseHeader(bytes)
        guard header.kdf == nil else {
            throw SecureCoreError.secretKindMismatch(sealedWith: .passphrase)
        }
        return try open(bytes, header: header, key: key, context: context)
    }

    /// Opens a raw-key envelope with a key held as `SecretBytes`.
    /// Throws as `open(_:key:context:)` with a `SymmetricKey`.
    public static func open<E: DataProtocol>(_ envelope: E, key: SecretBytes, context: some DataProtocol = Data()) throws(SecureCoreError) -> Data {
        try open(envelope, key: key.symmetricKey, context: context)
    }

    /// Opens a passphrase envelope. KDF parameters above `limits` are rejected before any KDF work.
    /// Throws `authenticationFailed` (wrong passphrase or context, modified data), `costAboveCeiling`, `secretKindMismatch` for a raw-key envelope, or a header error (`truncated`, `unrecognizedFormat`, `unsupportedAlgorithm`, `unsupportedKDF`, `invalidParameter` for a cost of zero).
    public static func open<E: DataProtocol, S: DataProtocol>(
        _ envelope: E, passphrase: S, context: some DataProtocol = Data(), limits: KDFLimits = .default
    ) throws(SecureCoreError) -> Data {
        let bytes = contiguous(envelope)
        let (header, kdf) = try passphraseHeader(bytes, limits: limits)
        let key = try kdf.deriveKey(from: passphrase, salt: header.salt, limits: limits)
        return try open(bytes, header: header, key: key.symmetricKey, context: context)
    }

    /// Checks everything `open(_:passphrase:context:limits:)` checks before its KDF work (the
    /// header, that a passphrase seals it, the cost against `limits`, the length), so that a
    /// caller who counts attempts can tell a damaged envelope from a wrong passphrase without
    /// spending one. Throws as that `open` does, except `authenticationFailed`.
    public static func checkPassphraseEnvelope<E: DataProtocol>(_ envelope: E, limits: KDFLimits = .default) throws(SecureCoreError) {
        _ = try passphraseHeader(contiguous(envelope), limits: limits)
    }

    private static func passphraseHeader(_ bytes: Data, limits: KDFLimits) throws(SecureCoreError) -> (Header, PasswordKDF) {
        let header = try parseHeader(bytes)
        guard let kdf = header.kdf else {
            throw SecureCoreError.secretKindMismatch(sealedWith: .rawKey)
        }
        try kdf.validate(within: limits)
        guard bytes.count >= header.encoded.count + AEAD.nonceByteCount + AEAD.tagByteCount else {
            throw SecureCoreError.truncated
        }
        return (header, kdf)
    }

    /// Reads the header of `envelope` without a key (to show what it needs, or to choose a key).
    /// Throws `truncated`, `unrecognizedFormat`, `unsupportedAlgorithm` or `unsupportedKDF`.
    public static func header<E: DataProtocol>(of envelope: E) throws(SecureCoreError) -> Header {
        try parseHeader(contiguous(envelope))
    }

    private static func open(_ bytes: Data, header: Header, key: SymmetricKey, context: some DataProtocol) throws(SecureCoreError) -> Data {
        let nonceStart = bytes.startIndex + header.encoded.count
        let bodyStart = nonceStart + AEAD.nonceByteCount
        guard bytes.endIndex - bodyStart >= AEAD.tagByteCount else { throw SecureCoreError.truncated }
        guard key.bitCount == keyByteCount * 8 else {
            throw SecureCoreError.invalidParameter("key must be \(keyByteCount) bytes")
        }
        // The envelope stores nonce || ciphertext || tag contiguously: swift-crypto's combined form.
        return try context.withContiguousBytes { (context) throws(SecureCoreError) in
            try withAssociatedData(header: header, context: context) { (ad) throws(SecureCoreError) in
                try AEAD.open(header.algorithm, combined: bytes[nonceStart...], key: key, authenticating: ad)
            }
        }
    }

    /// The input as `Data`, without a copy when it already is one (large envelopes are common).
    private static func contiguous<E: DataProtocol>(_ envelope: E) -> Data {
        envelope as? Data ?? Data(envelope)
    }

    // MARK: Header

    /// Calls `body` with `header || context`, the associated data of an envelope, built on the
    /// stack when small (a bulk writer seals hundreds of thousands of values).
    private static func withAssociatedData<R, E: Error>(
        header: Header, context: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        try withUnsafeTemporaryAllocation(byteCount: header.encoded.count + context.count, alignment: 1) { (buffer) throws(E) -> R in
            header.encoded.withUnsafeBytes { buffer.copyMemory(from: $0) }
            UnsafeMutableRawBufferPointer(rebasing: buffer[header.encoded.count...]).copyMemory(from: context)
            return try body(UnsafeRawBufferPointer(buffer))
        }
    }

    static func encodeHeader(algorithm: Algorithm, kdf: PasswordKDF?, salt: Data, magic: [UInt8] = magic) throws(SecureCoreError) -> Header {
        var bytes = Data(magic)
        bytes.append(algorithm.rawValue)
        switch kdf {
        case nil:
            bytes.append(0x00)
        case .scrypt(let logN, let r, let p)?:
            guard r <= 255, p <= 255 else {
                throw SecureCoreError.invalidParameter("the envelope format stores scrypt r and p in one byte each")
            }
            bytes.append(contentsOf: [0x01, logN, UInt8(r), UInt8(p)])
            bytes.append(salt)
        case .pbkdf2(_, let rounds)?:
            bytes.append(0x02)
            bytes.append(contentsOf: withUnsafeBytes(of: rounds.bigEndian, Array.init))
            bytes.append(salt)
        }
        return Header(algorithm: algorithm, kdf: kdf, salt: salt, encoded: bytes)
    }

    /// Parses the header at the start of `bytes`; the magic must be `magic`.
    static func parseHeader(_ bytes: Data, magic: [UInt8] = magic) throws(SecureCoreError) -> Header {
        var reader = ByteReader(bytes)
        guard let found = reader.read(magic.count) else {
            throw bytes.elementsEqual(magic.prefix(bytes.count)) ? SecureCoreError.truncated
                : SecureCoreError.unrecognizedFormat(expected: String(decoding: magic, as: UTF8.self))
        }
        guard found.elementsEqual(magic) else {
            throw SecureCoreError.unrecognizedFormat(expected: String(decoding: magic, as: UTF8.self))
        }
        guard let algorithmByte = reader.readByte() else { throw SecureCoreError.truncated }
        guard let algorithm = Algorithm(rawValue: algorithmByte) else {
            throw SecureCoreError.unsupportedAlgorithm(algorithmByte)
        }
        guard let kdfByte = reader.readByte() else { throw SecureCoreError.truncated }
        let kdf: PasswordKDF?
        var salt = Data()
        switch kdfByte {
        case 0x00:
            kdf = nil
        case 0x01:
            guard let params = reader.read(3) else { throw SecureCoreError.truncated }
            let p = Array(params)
            kdf = .scrypt(logN: p[0], r: UInt32(p[1]), p: UInt32(p[2]))
            guard let s = reader.read(saltByteCount) else { throw SecureCoreError.truncated }
            salt = s
        case 0x02:
            guard let rounds = reader.readUInt32() else { throw SecureCoreError.truncated }
            kdf = .pbkdf2(hash: .sha256, rounds: rounds)
            guard let s = reader.read(saltByteCount) else { throw SecureCoreError.truncated }
            salt = s
        default:
            throw SecureCoreError.unsupportedKDF(kdfByte)
        }
        return Header(algorithm: algorithm, kdf: kdf, salt: salt, encoded: Data(bytes.prefix(reader.offset)))
    }
}

/// Sequential big-endian reads from a byte buffer; nil when the buffer runs out.
struct ByteReader {
    let bytes: Data
    private(set) var offset = 0

    init(_ bytes: Data) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func read(_ count: Int) -> Data? {
        guard remaining >= count else { return nil }
        let start = bytes.startIndex + offset
        offset += count
        return bytes[start..<start + count]
    }

    mutating func readByte() -> UInt8? { read(1)?.first }

    mutating func readUInt32() -> UInt32? {
        guard let b = read(4) else { return nil }
        return b.reduce(0) { $0 << 8 | UInt32($1) }
    }
}
