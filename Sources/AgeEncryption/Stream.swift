import Crypto
import Dispatch
import Foundation
import SecureCore

/// The STREAM payload: 64 KiB chunks, each sealed with ChaCha20-Poly1305 under the payload key and
/// the nonce `counter (11 bytes, big-endian) || last-chunk flag (1 byte)`.
enum Stream {
    static let chunkSize = 64 * 1024
    static let tagSize = 16
    static let sealedChunkSize = chunkSize + tagSize
    static let payloadNonceSize = 16
    /// Chunks processed together (in parallel on all cores): 2 MiB of plaintext per batch.
    static let batchChunks = 32

    /// HKDF-SHA-256(ikm = file key, salt = nonce, info = "payload").
    static func payloadKey(fileKey: SecretBytes, nonce: some DataProtocol) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: fileKey.symmetricKey, salt: nonce, info: Data("payload".utf8), outputByteCount: 32)
    }

    /// Writes the 12-byte chunk nonce for `counter` and `last` at `destination`.
    static func writeNonce(counter: UInt64, last: Bool, to destination: UnsafeMutableRawPointer) {
        memset(destination, 0, 3)
        withUnsafeBytes(of: counter.bigEndian) { destination.advanced(by: 3).copyMemory(from: $0.baseAddress!, byteCount: 8) }
        destination.storeBytes(of: last ? 1 : 0, toByteOffset: 11, as: UInt8.self)
    }

    static func nonce(counter: UInt64, last: Bool) -> ChaChaPoly.Nonce {
        var bytes = (UInt64(0), UInt32(0))
        return withUnsafeMutableBytes(of: &bytes) { raw in
            writeNonce(counter: counter, last: last, to: raw.baseAddress!)
            return try! ChaChaPoly.Nonce(data: UnsafeRawBufferPointer(rebasing: raw[0..<12]))
        }
    }

    /// Runs `body(i)` for every i in `0..<count`, spread over the available cores, and returns when
    /// all have finished.
    static func parallel(_ count: Int, _ body: @Sendable (Int) -> Void) {
        if count <= 1 {
            for i in 0..<count { body(i) }
        } else {
            DispatchQueue.concurrentPerform(iterations: count, execute: body)
        }
    }
}

/// Per-iteration results of `Stream.parallel`. Unchecked: iteration i alone writes element i, and
/// the owner reads only after `parallel` returned.
struct ResultSlots<Element>: @unchecked Sendable {
    let base: UnsafeMutablePointer<Element>
    let count: Int

    init(count: Int, initialValue: Element) {
        self.count = count
        base = .allocate(capacity: max(count, 1))
        base.initialize(repeating: initialValue, count: count)
    }

    subscript(i: Int) -> Element {
        get { base[i] }
        nonmutating set { base[i] = newValue }
    }

    func deallocate() {
        base.deinitialize(count: count)
        base.deallocate()
    }
}

/// A fixed set of aligned slots, reused for every batch so memory stays bounded. Unchecked
/// Sendable: during `Stream.parallel`, each iteration touches only its own slot.
final class SlotBuffer: @unchecked Sendable {
    let slotSize: Int
    let count: Int
    private let storage: UnsafeMutableRawBufferPointer

    init(slots: Int, slotSize: Int) {
        self.slotSize = slotSize
        self.count = slots
        storage = .allocate(byteCount: slots * slotSize, alignment: 64)
    }

    deinit {
        // Plaintext may have passed through these slots.
        memset(storage.baseAddress!, 0, storage.count)
        storage.deallocate()
    }

    func slot(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: storage[i * slotSize..<(i + 1) * slotSize])
    }
}
