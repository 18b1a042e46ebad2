import Crypto
import Foundation
import Testing

@testable import SecureCore

/// SecureCore's one STREAM engine, with small chunks so every truncation and every byte flip of
/// multi-batch streams can be tried: the reporting rule shared by SFS1 and age.
@Suite struct STREAMTests {
    static let chunk = 64
    static let batch = 3
    static let sealedChunk = chunk + STREAM.tagByteCount

    static func stream(_ algorithm: Envelope.Algorithm, key: SymmetricKey, ad: Data = Data("ad".utf8)) -> STREAM {
        STREAM(algorithm: algorithm, key: key, associatedData: ad, chunkSize: chunk, chunksPerBatch: batch)
    }

    /// Seals `plaintext` through the pipelined path.
    static func seal(_ plaintext: Data, _ stream: STREAM) throws -> Data {
        var sealed = Data()
        let source = MemorySource(plaintext, readSize: 7)
        try STREAM.Encryptor(stream).encrypt(reading: source.read, writing: { sealed.append(contentsOf: $0) })
        return sealed
    }

    /// Seals `plaintext` through the push path, in writes of `step` bytes.
    static func sealPushing(_ plaintext: Data, _ stream: STREAM, step: Int) throws -> Data {
        var sealed = Data()
        let encryptor = STREAM.Encryptor(stream)
        for start in stride(from: 0, to: plaintext.count, by: step) {
            try Data(plaintext[start..<min(start + step, plaintext.count)]).withUnsafeBytes { bytes in
                try encryptor.write(bytes, to: { sealed.append(contentsOf: $0) })
            }
        }
        try encryptor.finish(to: { sealed.append(contentsOf: $0) })
        return sealed
    }

    /// Opens `sealed` through the pipelined path and through the pull path; both must agree.
    /// Returns the plaintext written and the error.
    static func open(_ sealed: Data, _ stream: STREAM) -> (Data, STREAMError?) {
        var written = Data()
        var pipelined: STREAMError?
        do {
            try STREAM.Decryptor(stream).decrypt(
                reading: MemorySource(sealed, readSize: 1000).read, writing: { written.append(contentsOf: $0) })
        } catch {
            pipelined = error as? STREAMError
            #expect(pipelined != nil, "not a STREAMError: \(error)")
        }
        var pulled = Data()
        var pull: STREAMError?
        let decryptor = STREAM.Decryptor(stream)
        let source = MemorySource(sealed, readSize: 333)
        do {
            while true {
                let chunks = try decryptor.nextBatch(reading: source.read)
                if chunks.isEmpty { break }
                for chunk in chunks { pulled.append(chunk) }
            }
        } catch {
            pull = error as? STREAMError
        }
        #expect(pull == pipelined && pulled == written, "pull and pipelined paths disagree")
        return (written, pipelined)
    }

    /// Sizes of the chunks of a `size`-byte plaintext, sealed.
    static func sealedChunkSizes(_ size: Int) -> [Int] {
        let full = size / chunk, rest = size % chunk
        var sizes = [Int](repeating: sealedChunk, count: full)
        if rest > 0 || size == 0 { sizes.append(rest + STREAM.tagByteCount) }
        return sizes
    }

    @Test(arguments: [0, 1, chunk - 1, chunk, chunk + 1, batch * chunk - 1, batch * chunk, batch * chunk + 1, 3 * batch * chunk + 5])
    func roundTripBothPathsSameBytes(size: Int) throws {
        for algorithm in Envelope.Algorithm.allCases {
            let stream = Self.stream(algorithm, key: SymmetricKey(size: .bits256))
            let plaintext = SecureRandom.bytes(count: size)
            let sealed = try Self.seal(plaintext, stream)
            #expect(sealed.count == Self.sealedChunkSizes(size).reduce(0, +))
            // No randomness inside the engine: both encryption paths give the same bytes.
            for step in [1, 5, Self.chunk, 1000] { #expect(try Self.sealPushing(plaintext, stream, step: step) == sealed) }
            let (opened, error) = Self.open(sealed, stream)
            #expect(error == nil)
            #expect(sameBytes(opened, plaintext))
        }
    }

    @Test func nonceLayoutIsCounterThenFinalFlag() {
        #expect(STREAM.nonce(counter: 0, final: false) == [UInt8](repeating: 0, count: 12))
        #expect(STREAM.nonce(counter: 0x0102_0304_0506_0708, final: true) == [0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1])
    }

    /// Every cut: at a chunk boundary (or within a tag's length of one) truncated, inside a chunk an
    /// authentication failure of that chunk; the plaintext of exactly the chunks before is written.
    @Test(arguments: [batch * chunk * 2 + 10, batch * chunk * 2])
    func everyTruncation(size: Int) throws {
        for algorithm in Envelope.Algorithm.allCases {
            let stream = Self.stream(algorithm, key: SymmetricKey(size: .bits256))
            let plaintext = SecureRandom.bytes(count: size)
            let sealed = try Self.seal(plaintext, stream)
            var chunkStart = 0
            for (index, sealedSize) in Self.sealedChunkSizes(size).enumerated() {
                for offset in 0..<sealedSize {
                    let (written, error) = Self.open(sealed.prefix(chunkStart + offset), stream)
                    let expected: STREAMError = offset < STREAM.tagByteCount ? .truncated : .authenticationFailed(chunk: UInt64(index))
                    #expect(error == expected, "\(algorithm) cut at \(chunkStart + offset)")
                    #expect(sameBytes(written, plaintext.prefix(index * Self.chunk)), "\(algorithm) cut at \(chunkStart + offset)")
                }
                chunkStart += sealedSize
            }
        }
    }

    /// Every byte flipped fails its own chunk, and no plaintext of that chunk or later is written.
    @Test(arguments: [batch * chunk + 10, batch * chunk * 2])
    func everyByteFlipped(size: Int) throws {
        for algorithm in Envelope.Algorithm.allCases {
            let stream = Self.stream(algorithm, key: SymmetricKey(size: .bits256))
            let plaintext = SecureRandom.bytes(count: size)
            let sealed = try Self.seal(plaintext, stream)
            for position in 0..<sealed.count {
                var tampered = sealed
                tampered[position] ^= 0x80
                let index = position / Self.sealedChunk
                let (written, error) = Self.open(tampered, stream)
                #expect(error == .authenticationFailed(chunk: UInt64(index)), "\(algorithm) flip at \(position)")
                #expect(sameBytes(written, plaintext.prefix(index * Self.chunk)), "\(algorithm) flip at \(position)")
            }
        }
    }

    /// Bytes after a full final chunk are trailing data, after all the plaintext. Bytes after a
    /// short final chunk make that chunk fail (it is read together with them, and finding its end
    /// would mean trying every split), after the plaintext before it.
    @Test(arguments: [1, chunk - 1, chunk, batch * chunk, batch * chunk + 1, 0])
    func bytesAfterTheFinalChunk(size: Int) throws {
        for algorithm in Envelope.Algorithm.allCases {
            let stream = Self.stream(algorithm, key: SymmetricKey(size: .bits256))
            let plaintext = SecureRandom.bytes(count: size)
            let sealed = try Self.seal(plaintext, stream)
            let sizes = Self.sealedChunkSizes(size)
            let finalIsFull = sizes.last! == Self.sealedChunk
            let expectedError: STREAMError = finalIsFull ? .trailingData : .authenticationFailed(chunk: UInt64(sizes.count - 1))
            let expectedWritten = finalIsFull ? plaintext : plaintext.prefix((sizes.count - 1) * Self.chunk)
            for junk in [1, 15, 16, 17, Self.sealedChunk - sizes.last!, Self.sealedChunk, 3 * Self.sealedChunk + 5] where junk > 0 {
                for filler: UInt8 in [0, 0xA5] {
                    let (written, error) = Self.open(sealed + Data(repeating: filler, count: junk), stream)
                    #expect(error == expectedError, "\(algorithm) size \(size) + \(junk) bytes")
                    #expect(sameBytes(written, expectedWritten), "\(algorithm) size \(size) + \(junk) bytes")
                }
            }
            #expect(Self.open(sealed + sealed, stream).1 == expectedError)
        }
    }

    @Test func longJunkAfterAShortFinalChunkFailsThatChunk() throws {
        // The final chunk and the bytes after it exceed one sealed chunk.
        let stream = Self.stream(.chaCha20Poly1305, key: SymmetricKey(size: .bits256))
        let plaintext = SecureRandom.bytes(count: Self.chunk + 10)
        let sealed = try Self.seal(plaintext, stream)
        let (written, error) = Self.open(sealed + Data(count: Self.sealedChunk), stream)
        #expect(error == .authenticationFailed(chunk: 1))
        #expect(sameBytes(written, plaintext.prefix(Self.chunk)))
    }

    @Test func wrongKeyWrongAssociatedDataReorderedAndEmptyFinalChunk() throws {
        for algorithm in Envelope.Algorithm.allCases {
            let key = SymmetricKey(size: .bits256)
            let stream = Self.stream(algorithm, key: key)
            let plaintext = SecureRandom.bytes(count: 3 * Self.chunk + 3)
            let sealed = try Self.seal(plaintext, stream)
            #expect(Self.open(sealed, Self.stream(algorithm, key: SymmetricKey(size: .bits256))).1 == .authenticationFailed(chunk: 0))
            #expect(Self.open(sealed, Self.stream(algorithm, key: key, ad: Data("other".utf8))).1 == .authenticationFailed(chunk: 0))
            let c = Self.sealedChunk
            let swapped = sealed[..<c] + sealed[2 * c..<3 * c] + sealed[c..<2 * c] + sealed[(3 * c)...]
            let (written, error) = Self.open(swapped, stream)
            #expect(error == .authenticationFailed(chunk: 1))
            #expect(sameBytes(written, plaintext.prefix(Self.chunk)))
            // The final chunk dropped: truncated at a boundary.
            #expect(Self.open(sealed.prefix(3 * c), stream).1 == .truncated)
            // An empty final chunk after full ones (which a conforming writer never produces).
            let exact = SecureRandom.bytes(count: 2 * Self.chunk)
            var forged = Data()
            for i in 0..<2 {
                try exact[(i * Self.chunk)..<((i + 1) * Self.chunk)].withUnsafeBytes {
                    forged.append(try stream.seal($0, counter: UInt64(i), final: false))
                }
            }
            try Data().withUnsafeBytes { forged.append(try stream.seal($0, counter: 2, final: true)) }
            let (forgedWritten, forgedError) = Self.open(forged, stream)
            #expect(forgedError == .emptyFinalChunk)
            #expect(forgedWritten == exact)
        }
    }
}

/// Equality without printing kilobytes on failure.
func sameBytes(_ a: Data, _ b: Data) -> Bool { a == b }

/// An in-memory source returning at most `readSize` bytes per read (short reads, as pipes give).
final class MemorySource: @unchecked Sendable {
    private let data: Data
    private let readSize: Int
    private var offset = 0

    init(_ data: Data, readSize: Int) {
        self.data = data
        self.readSize = readSize
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = min(buffer.count, readSize, data.count - offset)
        guard n > 0 else { return 0 }
        data.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: (data.startIndex + offset)..<(data.startIndex + offset + n))
        offset += n
        return n
    }
}
