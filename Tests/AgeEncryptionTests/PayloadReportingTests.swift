import AgeEncryption
import Foundation
import SecureCore
import Testing

/// The STREAM reporting rule shared with SFS1 (SecureCore's one engine), through age's public API:
/// a cut at a chunk boundary is `truncated`, bytes after a full final chunk are `trailingData`, a
/// modified chunk (or a short final chunk read together with bytes after it) is
/// `payloadAuthenticationFailed` naming that chunk, and only the plaintext of the chunks before the
/// failure is released (and of a full final chunk followed by bytes).
@Suite struct PayloadReportingTests {
    static let identity = Age.X25519Identity()
    static let chunk = 64 * 1024
    static let sealedChunk = chunk + 16
    /// Chunks per batch of the engine (2 MiB).
    static let batch = 32

    /// An encrypted file and where its payload starts (after the header and the 16-byte nonce).
    static func encrypt(_ plaintext: Data) throws -> (file: Data, payloadStart: Int) {
        let file = try Age.encrypt(plaintext, to: [identity.recipient])
        // "---", a space, the 43-character MAC and LF, then the 16-byte payload nonce.
        return (file, file.firstRange(of: Data("\n---".utf8))!.upperBound + 1 + 43 + 1 + 16)
    }

    /// Decrypts as a streaming caller would (both through `decrypt(to:)` and `read(into:)`, which
    /// must agree), returning the released plaintext and the error.
    static func attempt(_ bytes: Data) -> (Data, AgeError?) {
        let sink = Age.DataSink()
        var error: AgeError?
        do {
            try Age.Decryptor(from: Age.DataSource(bytes), identities: [identity], encoding: .binary).decrypt(to: sink)
        } catch let failure {
            error = failure as? AgeError
        }
        var pulled = Data()
        var pullError: AgeError?
        do {
            let decryptor = try Age.Decryptor(from: Age.DataSource(bytes), identities: [identity], encoding: .binary)
            var buffer = [UInt8](repeating: 0, count: 100_000)
            while true {
                let n = try buffer.withUnsafeMutableBytes { try decryptor.read(into: $0) }
                if n == 0 { break }
                pulled.append(contentsOf: buffer[..<n])
            }
        } catch let failure {
            pullError = failure as? AgeError
        }
        // read(into:) may drop the bytes of a call that ends in the error, never add any.
        #expect(pullError == error && sink.data.starts(with: pulled), "decrypt(to:) and read(into:) disagree")
        return (sink.data, error)
    }

    /// Equality without printing megabytes on failure.
    static func sameBytes(_ a: Data, _ b: Data) -> Bool { a == b }

    static func sealedChunkSizes(_ size: Int) -> [Int] {
        var sizes = [Int](repeating: sealedChunk, count: size / chunk)
        if size % chunk > 0 || size == 0 { sizes.append(size % chunk + 16) }
        return sizes
    }

    @Test(arguments: [0, 1, chunk - 1, chunk, chunk + 1, batch * chunk, 2 * batch * chunk + 3 * chunk + 5])
    func sizesRoundTrip(size: Int) throws {
        let plaintext = SecureRandom.bytes(count: size)
        let (file, payloadStart) = try Self.encrypt(plaintext)
        #expect(file.count - payloadStart == Self.sealedChunkSizes(size).reduce(0, +))
        let (opened, error) = Self.attempt(file)
        #expect(error == nil)
        #expect(Self.sameBytes(opened, plaintext))
    }

    /// An armored file whose plaintext fills whole batches (2 MiB) ends its payload exactly at a
    /// batch's end, so only one more read, the probe for bytes after the final chunk, meets what
    /// follows: garbage after the END line, or no END line. `read(into:)` took that read's error
    /// for the end of the input and handed out the whole plaintext as a valid file (age refuses
    /// both, the testkit's armor_garbage_trailing and armor_no_end_line); now both APIs refuse.
    @Test(arguments: [1, 2])
    func armoredFileEndingAtABatchIsChecked(batches: Int) throws {
        let plaintext = SecureRandom.bytes(count: batches * Self.batch * Self.chunk)
        let armored = try Age.encrypt(plaintext, to: [Self.identity.recipient], armored: true)
        let text = String(decoding: armored, as: UTF8.self)
        let endLine = "-----END AGE ENCRYPTED FILE-----"
        #expect(text.hasSuffix(endLine + "\n"))
        for damaged in [text + "garbage\n", String(text.dropLast(endLine.count + 1))] {
            var errors = [String]()
            do {
                try Age.Decryptor(from: Age.DataSource(Data(damaged.utf8)), identities: [Self.identity], encoding: .armored)
                    .decrypt(to: Age.DataSink())
                errors.append("decrypt(to:) accepted it")
            } catch let error as AgeError {
                if case .armor = error {} else { errors.append("decrypt(to:): \(error)") }
            }
            do {
                let decryptor = try Age.Decryptor(from: Age.DataSource(Data(damaged.utf8)), identities: [Self.identity], encoding: .armored)
                var buffer = [UInt8](repeating: 0, count: 1 << 20)
                while try buffer.withUnsafeMutableBytes({ try decryptor.read(into: $0) }) > 0 {}
                errors.append("read(into:) accepted it")
            } catch let error as AgeError {
                if case .armor = error {} else { errors.append("read(into:): \(error)") }
            }
            #expect(errors.isEmpty, "\(errors)")
        }
    }

    @Test func emptyPayload() throws {
        let (file, payloadStart) = try Self.encrypt(Data())
        let (opened, error) = Self.attempt(file)
        #expect(opened.isEmpty && error == nil)
        // No chunk at all after the nonce: truncated; part of the only chunk: truncated or failed.
        #expect(Self.attempt(file.prefix(payloadStart)).1 == .truncated)
        #expect(Self.attempt(file.prefix(payloadStart + 15)).1 == .truncated)
        let (released, trailing) = Self.attempt(file + Data([0x0A]))
        #expect(released.isEmpty && trailing == .payloadAuthenticationFailed(chunk: 0))
    }

    /// Every chunk boundary of a file spanning three batches, and cuts inside chunks.
    @Test func truncationAtEveryChunkBoundaryAndInsideChunks() throws {
        let size = 2 * Self.batch * Self.chunk + 2 * Self.chunk + 100
        let plaintext = SecureRandom.bytes(count: size)
        let (file, payloadStart) = try Self.encrypt(plaintext)
        let sizes = Self.sealedChunkSizes(size)
        var start = payloadStart
        for (index, sealedSize) in sizes.enumerated() {
            let (released, error) = Self.attempt(file.prefix(start))
            #expect(error == .truncated, "cut before chunk \(index)")
            #expect(Self.sameBytes(released, plaintext.prefix(index * Self.chunk)), "cut before chunk \(index)")
            start += sealedSize
        }
        // Inside chunks: within a tag's length of the boundary, truncated; further in, that chunk fails.
        var cuts: [(chunk: Int, offset: Int)] = [(1, 1), (1, 15), (1, 16), (1, 17), (1, 1000), (Self.batch, 40_000), (sizes.count - 1, 50)]
        cuts.append((0, Self.sealedChunk - 1))
        for cut in cuts {
            let length = payloadStart + cut.chunk * Self.sealedChunk + cut.offset
            let (released, error) = Self.attempt(file.prefix(length))
            let expected: AgeError = cut.offset < 16 ? .truncated : .payloadAuthenticationFailed(chunk: UInt64(cut.chunk))
            #expect(error == expected, "cut \(cut.offset) bytes into chunk \(cut.chunk)")
            #expect(Self.sameBytes(released, plaintext.prefix(cut.chunk * Self.chunk)))
        }
    }

    /// Bytes after a full final chunk (trailing data) and after a short one (that chunk fails).
    @Test(arguments: [1, chunk - 1, chunk + 1, chunk, 2 * chunk, batch * chunk])
    func trailingJunk(size: Int) throws {
        let plaintext = SecureRandom.bytes(count: size)
        let (file, _) = try Self.encrypt(plaintext)
        let finalSize = Self.sealedChunkSizes(size).last!
        let junk = finalSize == Self.sealedChunk
            ? [1, 16, 17, Self.sealedChunk, 3 * Self.sealedChunk]
            : [1, 2, 16, 17, Self.sealedChunk - finalSize].filter { $0 <= Self.sealedChunk - finalSize }
        for count in junk {
            let (released, error) = Self.attempt(file + Data(repeating: 0x0A, count: count))
            let finalIndex = UInt64(Self.sealedChunkSizes(size).count - 1)
            #expect(error == (finalSize == Self.sealedChunk ? .trailingData : .payloadAuthenticationFailed(chunk: finalIndex)), "\(size) bytes + \(count) junk")
            let expected = finalSize == Self.sealedChunk ? plaintext : plaintext.prefix(size / Self.chunk * Self.chunk)
            #expect(Self.sameBytes(released, expected), "\(size) bytes + \(count) junk")
        }
    }

    /// One flipped byte in each position class fails that chunk and releases only earlier chunks.
    @Test func flippedByteInEachPositionClass() throws {
        let size = Self.batch * Self.chunk + Self.chunk + 500
        let plaintext = SecureRandom.bytes(count: size)
        let (file, payloadStart) = try Self.encrypt(plaintext)
        let finalChunk = Self.batch + 1
        let positions: [(name: String, chunk: Int, offset: Int)] = [
            ("first byte of the first chunk", 0, 0), ("middle of the first chunk", 0, 30_000),
            ("tag of the first chunk", 0, Self.sealedChunk - 1), ("first chunk of the second batch", Self.batch, 5),
            ("last chunk of a batch, tag", Self.batch - 1, Self.sealedChunk - 16),
            ("final chunk body", finalChunk, 0), ("final chunk tag", finalChunk, 515),
        ]
        for position in positions {
            var tampered = file
            tampered[payloadStart + position.chunk * Self.sealedChunk + position.offset] ^= 0x01
            let (released, error) = Self.attempt(tampered)
            #expect(error == .payloadAuthenticationFailed(chunk: UInt64(position.chunk)), "\(position.name)")
            #expect(Self.sameBytes(released, plaintext.prefix(position.chunk * Self.chunk)), "\(position.name)")
        }
        // The payload nonce changes the payload key: the first chunk fails.
        var nonceFlipped = file
        nonceFlipped[payloadStart - 1] ^= 0x01
        let (released, error) = Self.attempt(nonceFlipped)
        #expect(released.isEmpty && error == .payloadAuthenticationFailed(chunk: 0))
    }
}
