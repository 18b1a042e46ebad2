import Foundation
import SecureCore
import Testing
@testable import AgeEncryption

/// A source that returns at most `step` bytes per read, as a socket or pipe may.
final class ShortReadSource: Age.ByteSource {
    private let data: Data
    private var offset = 0
    private let step: Int
    init(_ data: Data, step: Int) {
        self.data = data
        self.step = step
    }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(step, buffer.count, data.count - offset)
        data.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: offset..<(offset + count))
        offset += count
        return count
    }
}

/// Issue 12 item 3: short reads never end encryption or decryption early.
@Suite struct ShortReadTests {
    @Test(arguments: [1, 7, 65_535, 100_000], [false, true])
    func encryptionAndDecryptionReadUntilTheEnd(step: Int, armored: Bool) throws {
        let identity = Age.X25519Identity()
        let plaintext = SecureRandom.bytes(count: 200_000)
        let sink = Age.DataSink()
        try Age.Encryptor(recipients: [identity.recipient], to: sink, armored: armored)
            .encrypt(from: ShortReadSource(plaintext, step: step))
        let decrypted = Age.DataSink()
        try Age.Decryptor(from: ShortReadSource(sink.data, step: step), identities: [identity]).decrypt(to: decrypted)
        #expect(decrypted.data == plaintext)
    }
}
