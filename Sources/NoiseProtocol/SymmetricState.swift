import Crypto
import Foundation

extension Noise {
    /// The SymmetricState object of section 5.2: a `CipherState`, the chaining key `ck` and the
    /// handshake hash `h`. Not `Sendable`; the chaining key is zeroized when released.
    public final class SymmetricState {
        /// The hash function of the protocol.
        public let hash: HashFunction
        /// The CipherState `k`/`n` of the handshake.
        public let cipherState: CipherState
        private var chainingKey: SymmetricKey
        /// The handshake hash `h` (`GetHandshakeHash()`).
        public private(set) var handshakeHash: Data

        /// `InitializeSymmetric(protocol_name)`: `h` is the name padded with zeros to HASHLEN, or
        /// its hash when longer; `ck = h`; no cipher key.
        public init(protocolName: String, cipher: CipherFunction, hash: HashFunction) {
            self.hash = hash
            let name = Data(protocolName.utf8)
            handshakeHash =
                name.count <= hash.hashLength ? name + Data(count: hash.hashLength - name.count) : hash.hash([name])
            chainingKey = SymmetricKey(data: handshakeHash)
            cipherState = CipherState(cipher: cipher)
        }

        /// `MixKey(input_key_material)`: new `ck` and cipher key from HKDF.
        public func mixKey(_ inputKeyMaterial: some DataProtocol) {
            let outputs = hash.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 2)
            chainingKey = outputs[0]
            cipherState.initializeKey(outputs[1].truncatedToCipherKey)
        }

        /// `MixKey` with a DH output or other secret held as a key.
        func mixKey(_ secret: SymmetricKey) {
            secret.withUnsafeBytes { mixKey($0) }
        }

        /// `MixHash(data)`: `h = HASH(h || data)`.
        public func mixHash(_ data: some DataProtocol) {
            handshakeHash = hash.hash([handshakeHash, data])
        }

        /// `MixKeyAndHash(input_key_material)`: for pre-shared keys (section 9).
        public func mixKeyAndHash(_ inputKeyMaterial: SymmetricKey) {
            let outputs = inputKeyMaterial.withUnsafeBytes {
                hash.hkdf(chainingKey: chainingKey, inputKeyMaterial: $0, outputs: 3)
            }
            chainingKey = outputs[0]
            outputs[1].withUnsafeBytes { mixHash($0) }
            cipherState.initializeKey(outputs[2].truncatedToCipherKey)
        }

        /// `EncryptAndHash(plaintext)`: encrypts with `h` as associated data, then mixes the
        /// ciphertext into `h`.
        public func encryptAndHash(_ plaintext: some DataProtocol) throws(NoiseError) -> Data {
            let ciphertext = try cipherState.encrypt(withAD: handshakeHash, plaintext: plaintext)
            mixHash(ciphertext)
            return ciphertext
        }

        /// `DecryptAndHash(ciphertext)`: decrypts with `h` as associated data, then mixes the
        /// ciphertext into `h`. On `decryptionFailed` nothing changes.
        public func decryptAndHash(_ ciphertext: some DataProtocol) throws(NoiseError) -> Data {
            let plaintext = try cipherState.decrypt(withAD: handshakeHash, ciphertext: ciphertext)
            mixHash(ciphertext)
            return plaintext
        }

        /// `Split()`: the two transport CipherStates, for initiator-to-responder and
        /// responder-to-initiator traffic.
        public func split() -> (initiatorToResponder: CipherState, responderToInitiator: CipherState) {
            let outputs = hash.hkdf(chainingKey: chainingKey, inputKeyMaterial: Data(), outputs: 2)
            let first = CipherState(cipher: cipherState.cipher), second = CipherState(cipher: cipherState.cipher)
            first.initializeKey(outputs[0].truncatedToCipherKey)
            second.initializeKey(outputs[1].truncatedToCipherKey)
            return (first, second)
        }
    }
}
