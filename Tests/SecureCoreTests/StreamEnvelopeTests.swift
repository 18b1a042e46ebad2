import Crypto
import Foundation
import SFTestSupport
import Testing

@testable import SecureCore

@Suite struct StreamEnvelopeTests {
    let key = SymmetricKey(size: .bits256)
    static let chunk = StreamEnvelope.chunkSize
    static let batch = StreamEnvelope.chunkSize * StreamEnvelope.chunksPerBatch

    func encrypt(_ plaintext: Data, algorithm: Envelope.Algorithm = .aes256GCM, context: Data = Data()) throws -> Data {
        try withFiles(plaintext) { input, output in
            try StreamEnvelope.encrypt(from: FileInput(path: input), to: output, key: key, algorithm: algorithm, context: context)
        }
    }

    func decrypt(_ sealed: Data, key: SymmetricKey? = nil, context: Data = Data()) throws -> Data {
        try withFiles(sealed) { input, output in
            try StreamEnvelope.decrypt(from: FileInput(path: input), to: output, key: key ?? self.key, context: context)
        }
    }

    /// Writes `content` to a temporary file and runs `body` with its path and an output file; returns the output.
    func withFiles(_ content: Data, _ body: (String, borrowing FileOutput) throws -> Void) throws -> Data {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("in").path, output = dir.appendingPathComponent("out").path
        try content.write(to: URL(fileURLWithPath: input))
        try OutputDestination.write(to: output) { try body(input, $0) }
        return try Data(contentsOf: URL(fileURLWithPath: output))
    }

    @Test(arguments: [0, 1, chunk - 1, chunk, chunk + 1, 3 * chunk, batch - 1, batch, batch + 1, 2 * batch + chunk + 7])
    func roundTrip(size: Int) throws {
        let plaintext = SecureRandom.bytes(count: size)
        for algorithm in Envelope.Algorithm.allCases {
            let sealed = try encrypt(plaintext, algorithm: algorithm)
            let chunks = max(1, (size + Self.chunk - 1) / Self.chunk)
            #expect(sealed.count == 6 + 1 + 16 + size + 16 * chunks)
            #expect(try decrypt(sealed) == plaintext)
        }
    }

    @Test func passphraseRoundTripAndWrongPassphrase() throws {
        let plaintext = SecureRandom.bytes(count: 100_000)
        let phrase = Data("hunter2 but longer".utf8)
        let sealed = try withFiles(plaintext) { input, output in
            try StreamEnvelope.encrypt(from: FileInput(path: input), to: output, passphrase: phrase, kdf: .scrypt(logN: 10, r: 8, p: 1))
        }
        let opened = try withFiles(sealed) { input, output in
            try StreamEnvelope.decrypt(from: FileInput(path: input), to: output, passphrase: phrase)
        }
        #expect(sameBytes(opened, plaintext))
        expectError(.authenticationFailed) {
            _ = try withFiles(sealed) { input, output in
                try StreamEnvelope.decrypt(from: FileInput(path: input), to: output, passphrase: Data("nope".utf8))
            }
        }
        expectError(.secretKindMismatch(sealedWith: .passphrase)) { _ = try decrypt(sealed) }
        let byKey = try encrypt(plaintext)
        expectError(.secretKindMismatch(sealedWith: .rawKey)) {
            _ = try withFiles(byKey) { input, output in
                try StreamEnvelope.decrypt(from: FileInput(path: input), to: output, passphrase: phrase)
            }
        }
    }

    @Test func truncationAtEveryChunkBoundaryIsDetected() throws {
        let sealed = try encrypt(SecureRandom.bytes(count: 3 * Self.chunk + 100))
        let headerLength = 6 + 1 + 16
        let sealedChunk = Self.chunk + 16
        for chunks in 1...3 {
            expectError(.truncated, "after \(chunks) chunks") { _ = try decrypt(sealed.prefix(headerLength + chunks * sealedChunk)) }
        }
        expectError(.truncated) { _ = try decrypt(sealed.prefix(headerLength)) }
        expectError(.truncated) { _ = try decrypt(sealed.prefix(headerLength - 1)) }
        expectError(.truncated) { _ = try decrypt(sealed.prefix(headerLength + 10)) }
        expectError(.authenticationFailed) { _ = try decrypt(sealed.dropLast()) }
    }

    @Test func trailingDataIsDetected() throws {
        // A full final chunk followed by more bytes: the final-flagged chunk is not at the end.
        let full = try encrypt(SecureRandom.bytes(count: Self.chunk))
        expectError(.trailingData) { _ = try decrypt(full + Data([0])) }
        expectError(.trailingData) { _ = try decrypt(full + full.suffix(Self.chunk + 16)) }
        // A short final chunk followed by bytes fails to authenticate, as in age (one rule for both).
        let short = try encrypt(SecureRandom.bytes(count: 1000))
        expectError(.authenticationFailed) { _ = try decrypt(short + Data([0])) }
    }

    /// Decrypts `sealed` into a plain (non-atomic) file, as `sf open` to standard output does;
    /// returns what was written and the error.
    func attempt(_ sealed: Data, algorithm: Envelope.Algorithm? = nil) throws -> (Data, SecureCoreError?) {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("in").path, output = dir.appendingPathComponent("out").path
        try sealed.write(to: URL(fileURLWithPath: input))
        let fd = open(output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(fd >= 0)
        var failure: SecureCoreError?
        do {
            try StreamEnvelope.decrypt(from: FileInput(path: input), to: FileOutput(descriptor: fd, name: "out"), key: key)
        } catch {
            failure = error
        }
        close(fd)
        return (try Data(contentsOf: URL(fileURLWithPath: output)), failure)
    }

    static let headerLength = 6 + 1 + 16

    static func sealedChunkSizes(_ size: Int) -> [Int] {
        var sizes = [Int](repeating: chunk + 16, count: size / chunk)
        if size % chunk > 0 || size == 0 { sizes.append(size % chunk + 16) }
        return sizes
    }

    /// Every chunk boundary of a stream spanning three batches, and cuts inside chunks; only the
    /// plaintext of the chunks before the cut is written.
    @Test(arguments: Envelope.Algorithm.allCases)
    func truncationAtEveryChunkBoundaryAndInsideChunks(algorithm: Envelope.Algorithm) throws {
        let size = 2 * Self.batch + 2 * Self.chunk + 100
        let plaintext = SecureRandom.bytes(count: size)
        let sealed = try encrypt(plaintext, algorithm: algorithm)
        let sizes = Self.sealedChunkSizes(size)
        var start = Self.headerLength
        for (index, sealedSize) in sizes.enumerated() {
            let (written, error) = try attempt(sealed.prefix(start))
            #expect(error == .truncated, "cut before chunk \(index)")
            #expect(sameBytes(written, plaintext.prefix(index * Self.chunk)), "cut before chunk \(index)")
            start += sealedSize
        }
        let sealedChunk = Self.chunk + 16, chunksPerBatch = StreamEnvelope.chunksPerBatch
        var cuts: [(chunk: Int, offset: Int)] = [(1, 1), (1, 15), (1, 16), (1, 17), (1, 1000), (chunksPerBatch, 40_000), (sizes.count - 1, 50)]
        cuts.append((0, sealedChunk - 1))  // the one expensive case: every shorter final chunk is tried
        for cut in cuts {
            let (written, error) = try attempt(sealed.prefix(Self.headerLength + cut.chunk * sealedChunk + cut.offset))
            #expect(error == (cut.offset < 16 ? .truncated : .authenticationFailed), "cut \(cut.offset) bytes into chunk \(cut.chunk)")
            #expect(sameBytes(written, plaintext.prefix(cut.chunk * Self.chunk)))
        }
    }

    /// Bytes after a full final chunk: trailing data, with all the plaintext written. After a short
    /// final chunk: that chunk fails to authenticate, with the plaintext before it written.
    @Test(arguments: [0, 1, chunk - 1, chunk + 1, chunk, 2 * chunk, batch])
    func trailingJunkAfterShortAndFullFinalChunks(size: Int) throws {
        let plaintext = SecureRandom.bytes(count: size)
        let sealedChunk = Self.chunk + 16
        for algorithm in Envelope.Algorithm.allCases {
            let sealed = try encrypt(plaintext, algorithm: algorithm)
            let finalSize = Self.sealedChunkSizes(size).last!
            let junk = finalSize == sealedChunk
                ? [1, 16, 17, sealedChunk, 3 * sealedChunk]
                : [1, 2, 16, 17, sealedChunk - finalSize].filter { $0 <= sealedChunk - finalSize }
            for count in junk {
                let (written, error) = try attempt(sealed + Data(repeating: 0x0A, count: count))
                #expect(error == (finalSize == sealedChunk ? .trailingData : .authenticationFailed), "\(algorithm) \(size) bytes + \(count) junk")
                let expected = finalSize == sealedChunk ? plaintext : plaintext.prefix(size / Self.chunk * Self.chunk)
                #expect(sameBytes(written, expected), "\(algorithm) \(size) bytes + \(count) junk")
            }
        }
    }

    /// One flipped byte in each position class of the payload fails authentication, and only the
    /// plaintext of the chunks before the flipped one is written.
    @Test(arguments: Envelope.Algorithm.allCases)
    func flippedByteInEachPositionClass(algorithm: Envelope.Algorithm) throws {
        let size = Self.batch + Self.chunk + 500
        let plaintext = SecureRandom.bytes(count: size)
        let sealed = try encrypt(plaintext, algorithm: algorithm)
        let sealedChunk = Self.chunk + 16, chunksPerBatch = StreamEnvelope.chunksPerBatch
        let finalChunk = chunksPerBatch + 1
        let positions: [(name: String, chunk: Int, offset: Int)] = [
            ("first byte of the first chunk", 0, 0), ("middle of the first chunk", 0, 30_000),
            ("tag of the first chunk", 0, sealedChunk - 1), ("first chunk of the second batch", chunksPerBatch, 5),
            ("last chunk of a batch, tag", chunksPerBatch - 1, sealedChunk - 16),
            ("final chunk body", finalChunk, 0), ("final chunk tag", finalChunk, 515),
        ]
        for position in positions {
            var tampered = sealed
            tampered[Self.headerLength + position.chunk * sealedChunk + position.offset] ^= 0x01
            let (written, error) = try attempt(tampered)
            #expect(error == .authenticationFailed, "\(position.name)")
            #expect(sameBytes(written, plaintext.prefix(position.chunk * Self.chunk)), "\(position.name)")
        }
        // The header is authenticated with every chunk: a flipped stream-salt byte fails chunk 0.
        var saltFlipped = sealed
        saltFlipped[Self.headerLength - 1] ^= 0x01
        let (written, error) = try attempt(saltFlipped)
        #expect(written.isEmpty && error == .authenticationFailed)
    }

    @Test func flippedBytesSwappedChunksAndWrongContextAreRejected() throws {
        let plaintext = SecureRandom.bytes(count: 2 * Self.chunk + 5)
        let sealed = try encrypt(plaintext, context: Data("ctx".utf8))
        let headerLength = 6 + 1 + 16
        // One flip in every header byte and at several places in every chunk.
        var positions = Array(0..<headerLength)
        for start in stride(from: headerLength, to: sealed.count, by: Self.chunk + 16) {
            positions += [start, start + 1, min(start + Self.chunk + 15, sealed.count - 1)]
        }
        for index in positions {
            var tampered = sealed
            tampered[index] ^= 0x01
            #expect(throws: SecureCoreError.self, "flip at \(index)") { try decrypt(tampered, context: Data("ctx".utf8)) }
        }
        let a = headerLength, b = a + Self.chunk + 16, c = b + Self.chunk + 16
        let swapped = sealed[..<a] + sealed[b..<c] + sealed[a..<b] + sealed[c...]
        expectError(.authenticationFailed) { _ = try decrypt(swapped, context: Data("ctx".utf8)) }
        expectError(.authenticationFailed) { _ = try decrypt(sealed, context: Data("other".utf8)) }
        expectError(.authenticationFailed) { _ = try decrypt(sealed, key: SymmetricKey(size: .bits256), context: Data("ctx".utf8)) }
    }

    @Test func fileEncryptionLeavesNoOutputOnFailure() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plain = dir.appendingPathComponent("plain").path
        let sealed = dir.appendingPathComponent("sealed").path
        let opened = dir.appendingPathComponent("opened").path
        let content = SecureRandom.bytes(count: 5 * Self.chunk)
        try content.write(to: URL(fileURLWithPath: plain))
        try FileEncryption.encryptFile(at: plain, to: sealed, key: key)
        try FileEncryption.decryptFile(at: sealed, to: opened, key: key)
        #expect(try Data(contentsOf: URL(fileURLWithPath: opened)) == content)

        try FileManager.default.removeItem(atPath: opened)
        var tampered = try Data(contentsOf: URL(fileURLWithPath: sealed))
        tampered[tampered.count - 1] ^= 1
        try tampered.write(to: URL(fileURLWithPath: sealed))
        expectError(.authenticationFailed) { try FileEncryption.decryptFile(at: sealed, to: opened, key: key) }
        #expect(!FileManager.default.fileExists(atPath: opened))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["plain", "sealed"])

        #expect(throws: SecureCoreError.self) {
            try FileEncryption.encryptFile(at: dir.appendingPathComponent("missing").path, to: sealed, key: key)
        }

        // Creating without replacing: an existing file is left as it was.
        let before = try Data(contentsOf: URL(fileURLWithPath: sealed))
        expectError(.fileExists(path: sealed)) { try OutputDestination.write(Data("new".utf8), to: sealed, overwrite: false) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: sealed)) == before)
        let fresh = dir.appendingPathComponent("fresh").path
        try OutputDestination.write(Data("new".utf8), to: fresh, overwrite: false)
        #expect(try Data(contentsOf: URL(fileURLWithPath: fresh)) == Data("new".utf8))
    }
}
