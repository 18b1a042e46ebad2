import Crypto
import Foundation

/// MGF1, the mask generation function of RFC 8017 appendix B.2.1, over any swift-crypto hash.
enum MGF1 {
    /// XORs `MGF1(seed, target.count)` into `target` in place. The caller's buffers may hold secret
    /// values; nothing here branches on their contents.
    static func xorMask<H: Crypto.HashFunction>(
        _ hash: H.Type, seed: UnsafeRawBufferPointer, into target: UnsafeMutableRawBufferPointer
    ) {
        var offset = 0
        var counter: UInt32 = 0
        while offset < target.count {
            var hasher = H()
            hasher.update(bufferPointer: seed)
            withUnsafeBytes(of: counter.bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.finalize().withUnsafeBytes { block in
                let n = min(block.count, target.count - offset)
                for i in 0..<n { target[offset + i] ^= block[i] }
                offset += n
            }
            counter += 1
        }
    }
}
