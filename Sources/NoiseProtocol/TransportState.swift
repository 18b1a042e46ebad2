import Crypto
import Foundation

extension Noise {
    /// The result of a completed handshake: the two CipherStates of `Split()`, oriented for this
    /// party, with the handshake hash and the peer's authenticated static key. Not `Sendable`.
    public final class TransportState {
        /// This party's role in the handshake.
        public let role: Role
        /// The final handshake hash, for channel binding (section 11.2).
        public let handshakeHash: Data
        /// The peer's static public key, authenticated by the handshake; nil if the pattern has none.
        public let remoteStaticKey: Curve25519.KeyAgreement.PublicKey?
        /// The CipherState for messages this party sends; nil for the responder of a one-way pattern.
        public let sending: CipherState?
        /// The CipherState for messages this party receives; nil for the initiator of a one-way pattern.
        public let receiving: CipherState?

        /// The state `Split()` gives, from its parts. Public only to the fuzz target
        /// FuzzChannelFrames, which needs fresh states with fixed keys for every input (a
        /// handshake's DH operations would be most of its time).
        @_spi(Fuzzing) public init(
            role: Role, handshakeHash: Data, remoteStaticKey: Curve25519.KeyAgreement.PublicKey?, sending: CipherState?,
            receiving: CipherState?
        ) {
            self.role = role
            self.handshakeHash = handshakeHash
            self.remoteStaticKey = remoteStaticKey
            self.sending = sending
            self.receiving = receiving
        }

        /// Encrypts one transport message (empty associated data). `messageTooLong` (nothing
        /// changed) above 65,519 bytes of payload; `nonceExhausted`; `oneWayPattern`.
        public func writeMessage(_ payload: some DataProtocol) throws(NoiseError) -> Data {
            guard let sending else { throw .oneWayPattern }
            guard payload.count <= Noise.maxTransportPayloadLength else { throw .messageTooLong(payload.count + Noise.tagLength) }
            return try sending.encrypt(withAD: Data(), plaintext: payload)
        }

        /// Decrypts the next transport message. `decryptionFailed` (nothing changed) when it was
        /// altered, replayed, reordered or truncated; `messageTooLong` above 65,535 bytes.
        public func readMessage(_ message: some DataProtocol) throws(NoiseError) -> Data {
            guard let receiving else { throw .oneWayPattern }
            guard message.count <= Noise.maxMessageLength else { throw .messageTooLong(message.count) }
            return try receiving.decrypt(withAD: Data(), ciphertext: message)
        }

        /// `writeMessage` into `output`, which must have room for `payload.count + 16` bytes;
        /// returns the bytes written (the transport path, without intermediate buffers).
        package func writeMessage(_ payload: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(NoiseError) -> Int {
            guard let sending else { throw .oneWayPattern }
            guard payload.count <= Noise.maxTransportPayloadLength else { throw .messageTooLong(payload.count + Noise.tagLength) }
            return try sending.encrypt(plaintext: payload, into: output)
        }

        /// `readMessage` of contiguous bytes (the transport path, one copy into the sealed box).
        package func readMessage(_ message: UnsafeRawBufferPointer) throws(NoiseError) -> Data {
            guard let receiving else { throw .oneWayPattern }
            guard message.count <= Noise.maxMessageLength else { throw .messageTooLong(message.count) }
            return try receiving.decrypt(message: message)
        }

        /// Rekeys the sending direction (section 11.3); the peer must rekey its receiving direction
        /// at the same point in the stream.
        public func rekeySending() { sending?.rekey() }

        /// Rekeys the receiving direction (section 11.3).
        public func rekeyReceiving() { receiving?.rekey() }
    }
}
