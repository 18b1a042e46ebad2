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
        private let algorithm: Algorithm
        private let header: Header
        private var nonces: Data
        private var nextNonce: Int
        private let nonceBlock: Int

        /// A sealer for `key` (32 bytes) expecting to seal about `expectedCount` values (it reads
        /// that many nonces at a time, at most 4,096).
        public init(key: SecretBytes, algorithm: Algorithm = .aes256GCM, expectedCount: Int = 256) throws(SecureCoreError) {
            guard key.count == keyByteCount else { throw SecureCoreError.invalidParameter("key must be \(keyByteCount) bytes") }
            self.key = key.symmetricKey
            self.algorithm = algorithm
            header = try encodeHeader(algorithm: algorithm, kdf: nil, salt: Data())
            nonceBlock = min(max(expectedCount, 1), 4_096) * AEAD.nonceByteCount
            nonces = Data()
            nextNonce = 0
        }

        /// Seals `plaintext` bound to `context` under a fresh random nonce.
        /// Throws `SecureCoreError.invalidParameter` only if the AEAD refuses the key.
        public mutating func seal(_ plaintext: some DataProtocol, context: some DataProtocol = Data()) throws(SecureCoreError) -> Data {
            if nextNonce == nonces.count {
                nonces = SecureRandom.bytes(count: nonceBlock)
                nextNonce = 0
            }
            let nonce = nonces[nextNonce..<nextNonce + AEAD.nonceByteCount]
            nextNonce += AEAD.nonceByteCount
            var output = Data(capacity: header.encoded.count + AEAD.nonceByteCount + plaintext.count + AEAD.tagByteCount)
            output.append(header.encoded)
            output.append(nonce)
            try AEAD.seal(
                algorithm, plaintext, key: key, nonce: nonce, authenticating: associatedData(header: header, context: context),
                appendingTo: &output)
            return output
        }
    }
}
