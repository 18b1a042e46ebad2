import Crypto
import Foundation

extension Noise {
    /// The CipherState object of section 5.1: a key `k` (or none) and a 64-bit nonce `n`.
    ///
    /// A reference type on purpose: copying a value that holds a key and a nonce would let two
    /// copies encrypt under the same nonce. Not `Sendable`: one owner (a task or an event loop)
    /// drives it. The key is a swift-crypto `SymmetricKey`, zeroized when released.
    public final class CipherState {
        /// The cipher this state encrypts with.
        public let cipher: CipherFunction
        private var key: SymmetricKey?
        /// The nonce `n` the next encryption or decryption will use.
        public private(set) var nonce: UInt64 = 0

        /// A state with no key (section 5.1 `InitializeKey(empty)`).
        public init(cipher: CipherFunction) {
            self.cipher = cipher
        }

        /// `InitializeKey(key)`: sets the key (32 bytes, or nil for none) and the nonce to zero.
        public func initializeKey(_ key: SymmetricKey?) {
            precondition(key.map { $0.bitCount == 256 } ?? true, "a Noise cipher key is 32 bytes")
            self.key = key
            nonce = 0
        }

        /// `HasKey()`: true when a key is set.
        public var hasKey: Bool { key != nil }

        /// `SetNonce(nonce)`: for out-of-order transports that carry the nonce themselves.
        public func setNonce(_ nonce: UInt64) {
            self.nonce = nonce
        }

        /// `EncryptWithAd(ad, plaintext)`: with a key, the ciphertext and tag under the current
        /// nonce, which is then incremented; without a key, the plaintext unchanged.
        /// `nonceExhausted` (nothing changed) when the nonce is 2^64-1, which is reserved.
        public func encrypt(withAD ad: some DataProtocol, plaintext: some DataProtocol) throws(NoiseError) -> Data {
            guard let key else { return Data(plaintext) }
            guard nonce < .max else { throw .nonceExhausted }
            let ciphertext = cipher.encrypt(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
            nonce += 1
            return ciphertext
        }

        /// `DecryptWithAd(ad, ciphertext)`: with a key, the authenticated plaintext, after which the
        /// nonce is incremented; without a key, the ciphertext unchanged. On `decryptionFailed` or
        /// `nonceExhausted` the nonce is unchanged.
        public func decrypt(withAD ad: some DataProtocol, ciphertext: some DataProtocol) throws(NoiseError) -> Data {
            guard let key else { return Data(ciphertext) }
            guard nonce < .max else { throw .nonceExhausted }
            let plaintext = try cipher.decrypt(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext)
            nonce += 1
            return plaintext
        }

        /// `EncryptWithAd(zerolen, plaintext)` for transport messages, written into `output` (which
        /// must have room for `plaintext.count + 16` bytes); returns the bytes written. Requires a
        /// key. `nonceExhausted` (nothing changed, nothing written) when the nonce is 2^64-1.
        func encrypt(plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(NoiseError) -> Int {
            guard let key else { preconditionFailure("transport encryption needs a key") }
            guard nonce < .max else { throw .nonceExhausted }
            let written = cipher.encrypt(key: key, nonce: nonce, plaintext: plaintext, into: output)
            nonce += 1
            return written
        }

        /// `DecryptWithAd(zerolen, message)` for transport messages. Requires a key. On
        /// `decryptionFailed` or `nonceExhausted` the nonce is unchanged.
        func decrypt(message: UnsafeRawBufferPointer) throws(NoiseError) -> Data {
            guard let key else { preconditionFailure("transport decryption needs a key") }
            guard nonce < .max else { throw .nonceExhausted }
            let plaintext = try cipher.decrypt(key: key, nonce: nonce, message: message)
            nonce += 1
            return plaintext
        }

        /// `Rekey()` (section 4.2): the key becomes the first 32 bytes of
        /// `ENCRYPT(k, 2^64-1, zerolen, zeros)`. The nonce is unchanged. No effect without a key.
        public func rekey() {
            guard let key else { return }
            var next = cipher.encrypt(key: key, nonce: .max, ad: Data(), plaintext: Data(count: 32))
            defer { next.resetBytes(in: next.startIndex..<next.endIndex) }  // the new key's bytes
            self.key = next.withUnsafeBytes { SymmetricKey(data: UnsafeRawBufferPointer(rebasing: $0.prefix(32))) }
        }
    }
}
