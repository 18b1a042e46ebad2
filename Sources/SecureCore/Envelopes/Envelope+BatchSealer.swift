import Crypto
import Foundation

extension Envelope {
    /// Seals many values under one raw key, for bulk writers (a record store sealing thousands of
    /// fields). Every envelope is exactly what `Envelope.seal(_:key:algorithm:context:)` would make
    /// and opens with `Envelope.open(_:key:context:)`; what changes is the cost: the key is turned
    /// into a swift-crypto key once, the header is encoded once, and the random nonces are read from
    /// the system generator in blocks instead of one system call per value.
    ///
    /// Not `Sendable` on purpose: each thread makes its own sealer. The same 2^32-messages-per-key
    /// bound applies as for `Envelope.seal`, since every nonce is still 96 fresh random bits.
    public struct BatchSealer {
        private let key: SymmetricKey
        private let header: Header
        private var nonces: [UInt8]
        private var nextNonce: Int
        private let nonceBlock: Int

        /// A sealer for `key` (32 bytes) expecting to seal about `expectedCount` values (it reads
        /// that many nonces at a time, at most 4,096).
        public init(key: SecretBytes, algorithm: Algorithm = .aes256GCM, expectedCount: Int = 256) throws(SecureCoreError) {
            guard key.count == keyByteCount else { throw SecureCoreError.invalidParameter("key must be \(keyByteCount) bytes") }
            self.key = key.symmetricKey
            header = try encodeHeader(algorithm: algorithm, kdf: nil, salt: Data())
            nonceBlock = min(max(expectedCount, 1), 4_096) * AEAD.nonceByteCount
            nonces = []
            nextNonce = 0
        }

        /// Seals `plaintext` bound to `context` under a fresh random nonce.
        /// Throws `SecureCoreError.invalidParameter` only if the AEAD refuses the key.
        public mutating func seal(_ plaintext: some DataProtocol, context: some DataProtocol = Data()) throws(SecureCoreError) -> Data {
            try plaintext.withContiguousBytes { (plaintext) throws(SecureCoreError) in
                try context.withContiguousBytes { (context) throws(SecureCoreError) in try seal(plaintext, context: context) }
            }
        }

        /// `seal(_:context:)` for bytes already in buffers (what a bulk writer holds; no generic
        /// path per call).
        public mutating func seal(_ plaintext: UnsafeRawBufferPointer, context: UnsafeRawBufferPointer) throws(SecureCoreError) -> Data {
            if nextNonce == nonces.count {
                nonces = [UInt8](unsafeUninitializedCapacity: nonceBlock) { buffer, count in
                    SecureRandom.fill(UnsafeMutableRawBufferPointer(buffer))
                    count = nonceBlock
                }
                nextNonce = 0
            }
            let nonceStart = nextNonce
            nextNonce += AEAD.nonceByteCount
            return try nonces.withUnsafeBytes { nonces in
                Result { () throws(SecureCoreError) in
                    let nonce = UnsafeRawBufferPointer(rebasing: nonces[nonceStart..<nonceStart + AEAD.nonceByteCount])
                    return try Envelope.seal(plaintext, key: key, header: header, nonce: nonce, context: context)
                }
            }.get()
        }
    }
}
