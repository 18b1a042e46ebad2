import Crypto
import Foundation

extension Noise {
    /// The HandshakeState object of section 5.3: runs one handshake, message by message, then
    /// hands over a `TransportState`.
    ///
    /// Any error while reading or writing a message aborts the handshake (section 5.3): later
    /// calls throw `handshakeAborted`. The one exception is `messageTooLong` on write, which is
    /// checked before anything changes. Not `Sendable`: one owner drives it.
    public final class HandshakeState {
        /// The protocol being run.
        public let protocolName: ProtocolName
        /// This party's role.
        public let role: Role
        private let symmetric: SymmetricState
        private let localStatic: Curve25519.KeyAgreement.PrivateKey?
        private var localEphemeral: Curve25519.KeyAgreement.PrivateKey?
        /// The peer's static public key: given in advance, or learned from a handshake message
        /// (authenticated once the handshake completes).
        public private(set) var remoteStaticKey: Curve25519.KeyAgreement.PublicKey?
        /// The peer's ephemeral public key, once received.
        public private(set) var remoteEphemeralKey: Curve25519.KeyAgreement.PublicKey?
        private var presharedKeys: ArraySlice<SymmetricKey>
        private var messageIndex = 0
        private var aborted = false
        private var transport: TransportState?

        /// `Initialize(...)`: starts a handshake for `protocolName` as `role`.
        ///
        /// - Parameters:
        ///   - prologue: data both parties must agree on; any difference makes the handshake fail.
        ///   - staticKey: this party's static key pair, when the pattern uses one
        ///     (`missingLocalStaticKey` otherwise).
        ///   - remoteStaticKey: the peer's static key, when the pattern's pre-message needs it
        ///     (`missingRemoteStaticKey` otherwise).
        ///   - presharedKeys: one 32-byte key per `psk` token, in order (`wrongPresharedKeyCount`,
        ///     `invalidPresharedKeyLength`).
        public convenience init(
            protocolName: ProtocolName, role: Role, prologue: some DataProtocol = Data(),
            staticKey: Curve25519.KeyAgreement.PrivateKey? = nil, remoteStaticKey: Curve25519.KeyAgreement.PublicKey? = nil,
            presharedKeys: [SymmetricKey] = []
        ) throws(NoiseError) {
            try self.init(
                protocolName: protocolName, role: role, prologue: prologue, staticKey: staticKey,
                remoteStaticKey: remoteStaticKey, presharedKeys: presharedKeys, fixedEphemeralKey: nil)
        }

        /// As the public initializer, with the ephemeral key fixed in advance instead of generated.
        /// Only for known-answer tests: reusing an ephemeral key destroys the protocol's security.
        @_spi(KnownAnswerTesting)
        public init(
            protocolName: ProtocolName, role: Role, prologue: some DataProtocol,
            staticKey: Curve25519.KeyAgreement.PrivateKey?, remoteStaticKey: Curve25519.KeyAgreement.PublicKey?,
            presharedKeys: [SymmetricKey], fixedEphemeralKey: Curve25519.KeyAgreement.PrivateKey?
        ) throws(NoiseError) {
            let pattern = protocolName.pattern
            let localPre = role == .initiator ? pattern.initiatorPreMessage : pattern.responderPreMessage
            let remotePre = role == .initiator ? pattern.responderPreMessage : pattern.initiatorPreMessage
            let sendsStatic = pattern.messages.contains { $0.sender == role && $0.tokens.contains(.s) }
            if (sendsStatic || localPre.contains(.s)) && staticKey == nil { throw .missingLocalStaticKey }
            if remotePre.contains(.s) && remoteStaticKey == nil { throw .missingRemoteStaticKey }
            guard presharedKeys.count == pattern.presharedKeyCount else {
                throw .wrongPresharedKeyCount(expected: pattern.presharedKeyCount, given: presharedKeys.count)
            }
            guard presharedKeys.allSatisfy({ $0.bitCount == 256 }) else { throw .invalidPresharedKeyLength }

            self.protocolName = protocolName
            self.role = role
            self.localStatic = staticKey
            self.localEphemeral = fixedEphemeralKey
            self.remoteStaticKey = remotePre.contains(.s) ? remoteStaticKey : nil
            self.presharedKeys = presharedKeys[...]
            symmetric = SymmetricState(protocolName: protocolName.description, cipher: protocolName.cipher, hash: protocolName.hash)
            symmetric.mixHash(prologue)
            // Pre-message keys, the initiator's first (section 5.3); only `s` is allowed in them.
            for party in [Role.initiator, .responder] where !(party == .initiator ? pattern.initiatorPreMessage : pattern.responderPreMessage).isEmpty {
                let key = party == role ? staticKey?.publicKey : remoteStaticKey
                if let key { symmetric.mixHash(key.rawRepresentation) }
            }
        }

        /// True once every handshake message has been written or read.
        public var isComplete: Bool { messageIndex == protocolName.pattern.messages.count }

        /// The handshake messages written or read so far.
        public var messagesProcessed: Int { messageIndex }

        /// True when the next handshake message is this party's to write.
        public var isMyTurn: Bool { !isComplete && protocolName.pattern.messages[messageIndex].sender == role }

        /// `GetHandshakeHash()`: after completion, a value unique to this session that both parties
        /// share, for channel binding (section 11.2).
        public var handshakeHash: Data { symmetric.handshakeHash }

        /// `WriteMessage(payload, message_buffer)`: the next handshake message carrying `payload`.
        /// `messageTooLong` (nothing changed) when the message would exceed 65,535 bytes; `outOfTurn`
        /// when a message must be read first.
        public func writeMessage(payload: some DataProtocol = Data()) throws(NoiseError) -> Data {
            let message = try nextMessage(sender: role)
            let length = predictedLength(of: message, payload: payload.count)
            guard length <= Noise.maxMessageLength else { throw .messageTooLong(length) }
            return try abortingOnError { () throws(NoiseError) -> Data in
                var buffer = Data()
                buffer.reserveCapacity(length)
                for token in message.tokens {
                    switch token {
                    case .e:
                        let ephemeral = localEphemeral ?? Curve25519.KeyAgreement.PrivateKey()
                        localEphemeral = ephemeral
                        let publicKey = ephemeral.publicKey.rawRepresentation
                        buffer += publicKey
                        mixEphemeral(publicKey)
                    case .s:
                        guard let localStatic else { throw .missingLocalStaticKey }
                        buffer += try symmetric.encryptAndHash(localStatic.publicKey.rawRepresentation)
                    case .ee, .es, .se, .ss: try mixDH(token)
                    case .psk: mixPresharedKey()
                    }
                }
                buffer += try symmetric.encryptAndHash(payload)
                finishMessage()
                return buffer
            }
        }

        /// `ReadMessage(message, payload_buffer)`: processes the peer's next handshake message and
        /// returns its authenticated payload. `messageTooLong`, `messageTooShort`,
        /// `decryptionFailed`, `invalidPublicKey` abort the handshake.
        public func readMessage(_ message: some DataProtocol) throws(NoiseError) -> Data {
            let pattern = try nextMessage(sender: role.peer)
            return try abortingOnError { () throws(NoiseError) -> Data in
                guard message.count <= Noise.maxMessageLength else { throw .messageTooLong(message.count) }
                var rest = Data(message)[...]
                func take(_ count: Int) throws(NoiseError) -> Data {
                    guard rest.count >= count else { throw .messageTooShort }
                    defer { rest = rest.dropFirst(count) }
                    return Data(rest.prefix(count))
                }
                let dhLength = protocolName.dh.dhLength
                for token in pattern.tokens {
                    switch token {
                    case .e:
                        let bytes = try take(dhLength)
                        remoteEphemeralKey = try protocolName.dh.publicKey(bytes)
                        mixEphemeral(bytes)
                    case .s:
                        let bytes = try take(dhLength + (symmetric.cipherState.hasKey ? Noise.tagLength : 0))
                        remoteStaticKey = try protocolName.dh.publicKey(symmetric.decryptAndHash(bytes))
                    case .ee, .es, .se, .ss: try mixDH(token)
                    case .psk: mixPresharedKey()
                    }
                }
                if symmetric.cipherState.hasKey, rest.count < Noise.tagLength { throw .messageTooShort }
                let payload = try symmetric.decryptAndHash(rest)
                finishMessage()
                return payload
            }
        }

        /// The transport state (`Split()`), once the handshake is complete (`handshakeIncomplete`
        /// before). Every call returns the same object.
        public func transportState() throws(NoiseError) -> TransportState {
            guard !aborted else { throw .handshakeAborted }
            guard let transport else { throw .handshakeIncomplete }
            return transport
        }

        // MARK: - Tokens

        private func nextMessage(sender: Role) throws(NoiseError) -> HandshakePattern.Message {
            guard !aborted else { throw .handshakeAborted }
            guard !isComplete else { throw .handshakeAlreadyComplete }
            let message = protocolName.pattern.messages[messageIndex]
            guard message.sender == sender else { throw .outOfTurn }
            return message
        }

        private func abortingOnError<T>(_ body: () throws(NoiseError) -> T) throws(NoiseError) -> T {
            do { return try body() } catch {
                aborted = true
                throw error
            }
        }

        /// `e`: MixHash, and in a PSK handshake also MixKey (section 9.2).
        private func mixEphemeral(_ publicKey: Data) {
            symmetric.mixHash(publicKey)
            if protocolName.pattern.presharedKeyCount > 0 { symmetric.mixKey(publicKey) }
        }

        /// `ee`, `es`, `se`, `ss`: the first letter names the initiator's key, the second the responder's.
        private func mixDH(_ token: HandshakePattern.Token) throws(NoiseError) {
            let letters = Array(token.rawValue)
            let (mine, theirs) = role == .initiator ? (letters[0], letters[1]) : (letters[1], letters[0])
            guard let privateKey = mine == "e" ? localEphemeral : localStatic,
                let publicKey = theirs == "e" ? remoteEphemeralKey : remoteStaticKey
            else { throw .invalidPattern("\(token) without both keys") }
            symmetric.mixKey(try protocolName.dh.dh(privateKey, publicKey))
        }

        private func mixPresharedKey() {
            symmetric.mixKeyAndHash(presharedKeys.removeFirst())
        }

        private func finishMessage() {
            messageIndex += 1
            guard isComplete else { return }
            let (initiatorToResponder, responderToInitiator) = symmetric.split()
            let oneWay = protocolName.pattern.isOneWay
            let (sending, receiving) =
                role == .initiator ? (initiatorToResponder, responderToInitiator) : (responderToInitiator, initiatorToResponder)
            transport = TransportState(
                role: role, handshakeHash: symmetric.handshakeHash, remoteStaticKey: remoteStaticKey,
                sending: oneWay && role == .responder ? nil : sending,
                receiving: oneWay && role == .initiator ? nil : receiving)
            localEphemeral = nil
        }

        /// The length of the next message: keys, encrypted static key and payload, with a tag for
        /// each encryption made once a key exists.
        private func predictedLength(of message: HandshakePattern.Message, payload: Int) -> Int {
            var keyed = symmetric.cipherState.hasKey
            let psk = protocolName.pattern.presharedKeyCount > 0
            var length = payload
            for token in message.tokens {
                switch token {
                case .e:
                    length += protocolName.dh.dhLength
                    if psk { keyed = true }
                case .s: length += protocolName.dh.dhLength + (keyed ? Noise.tagLength : 0)
                case .ee, .es, .se, .ss, .psk: keyed = true
                }
            }
            return length + (keyed ? Noise.tagLength : 0)
        }
    }
}
