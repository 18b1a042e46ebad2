extension Noise {
    /// A handshake pattern (section 7): pre-messages, then message patterns of tokens, optionally
    /// with `pskN` modifiers (section 9). Every value is valid: the initializers check the rules of
    /// sections 7.3 and 9.3.
    public struct HandshakePattern: Sendable, Hashable, CustomStringConvertible {
        /// A token of a message pattern (section 7.1) or the `psk` token of section 9.
        public enum Token: String, Sendable, Hashable, CaseIterable {
            /// The sender's ephemeral public key.
            case e
            /// The sender's static public key (encrypted once a key exists).
            case s
            /// DH between the initiator's and the responder's ephemeral keys.
            case ee
            /// DH between the initiator's ephemeral key and the responder's static key.
            case es
            /// DH between the initiator's static key and the responder's ephemeral key.
            case se
            /// DH between both static keys.
            case ss
            /// Mixes the next pre-shared key (`MixKeyAndHash`).
            case psk

            /// True for the four DH tokens.
            var isDH: Bool { self == .ee || self == .es || self == .se || self == .ss }
        }

        /// One message pattern: who sends it and the tokens it carries, in order.
        public struct Message: Sendable, Hashable {
            /// The party that writes this message.
            public let sender: Role
            /// The tokens, processed in order before the payload.
            public let tokens: [Token]

            /// A message pattern sent by `sender`.
            public init(sender: Role, tokens: [Token]) {
                self.sender = sender
                self.tokens = tokens
            }
        }

        /// The name, as in a protocol name (for example `XXpsk3`).
        public let name: String
        /// The initiator's pre-message: empty or `[.s]` (keys the responder knows in advance).
        public let initiatorPreMessage: [Token]
        /// The responder's pre-message: empty or `[.s]` (keys the initiator knows in advance).
        public let responderPreMessage: [Token]
        /// The handshake messages, alternating between the parties, the initiator first.
        public let messages: [Message]

        /// A custom pattern, checked against the validity rules of section 7.3 (`invalidPattern`)
        /// and the PSK rule of section 9.3 (`pskWithoutEphemeral`). Pre-messages may only hold `s`
        /// (ephemeral pre-messages belong to the unsupported `fallback` modifier).
        public init(name: String, initiatorPreMessage: [Token] = [], responderPreMessage: [Token] = [], messages: [Message])
            throws(NoiseError)
        {
            self.init(
                unchecked: name, initiatorPreMessage: initiatorPreMessage, responderPreMessage: responderPreMessage,
                messages: messages)
            var validator = PatternValidator(self)
            try validator.validate()
        }

        /// A pattern not yet checked (the catalog while modifiers are applied).
        init(unchecked name: String, initiatorPreMessage: [Token], responderPreMessage: [Token], messages: [Message]) {
            self.name = name
            self.initiatorPreMessage = initiatorPreMessage
            self.responderPreMessage = responderPreMessage
            self.messages = messages
        }

        /// The pattern named `name`: one of the fundamental patterns of sections 7.4, 7.5 and 18
        /// (`NN` ... `I1X1`) followed by `pskN` modifiers joined with `+` (`XXpsk3`, `NNpsk0+psk2`).
        /// `unsupportedPattern` for an unknown base or the `fallback` modifier, `invalidModifier`
        /// for a malformed, duplicate or out-of-range `pskN`.
        public init(named name: String) throws(NoiseError) {
            let base = String(name.prefix { $0.isUppercase || $0.isNumber })
            guard let notation = Self.catalog[base] else { throw .unsupportedPattern(name) }
            var pattern = try Self.parse(name: base, notation: notation)
            let modifiers = name.dropFirst(base.count)
            if !modifiers.isEmpty {
                var seen = Set<Int>()
                for modifier in modifiers.split(separator: "+", omittingEmptySubsequences: false) {
                    guard modifier.hasPrefix("psk") else {
                        throw modifier == "fallback" ? .unsupportedPattern(name) : .invalidModifier(String(modifier))
                    }
                    let digits = modifier.dropFirst(3)
                    guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
                        digits == "0" || !digits.hasPrefix("0"),
                        let position = Int(digits), position <= pattern.messages.count, seen.insert(position).inserted
                    else { throw .invalidModifier(String(modifier)) }
                    pattern = pattern.insertingPSK(at: position)
                }
            }
            self = try HandshakePattern(
                name: name, initiatorPreMessage: pattern.initiatorPreMessage,
                responderPreMessage: pattern.responderPreMessage, messages: pattern.messages)
        }

        /// Whether `role` ends the handshake having read a payload encrypted under a key mixed
        /// from a DH with the other party's static key (`se` or `ss` for the responder, `es` or
        /// `ss` for the initiator): only then has the other party proven it holds the static key
        /// it sent or was known by. A static key alone, sent in the clear (IX's first message) or
        /// known in advance (K, KK1, ...), proves nothing: the responder of IX, IN or KK1, or the
        /// initiator of NX1 or XX1, finishes without such proof. False when the other party has
        /// no static key in the pattern at all.
        public func provesPeerStaticKey(to role: Noise.Role) -> Bool {
            messageProvingPeerStaticKey(to: role) != nil
        }

        /// The index (from 0) of the message whose reading gives `role` that proof
        /// (`provesPeerStaticKey`): the first message from the other party at or after the first
        /// DH with its static key. Before it, a static key the other party sent is only a claim
        /// (the deferred patterns, I1X say, send it in the first message and prove it in the third).
        /// Nil when the pattern gives no such proof.
        public func messageProvingPeerStaticKey(to role: Noise.Role) -> Int? {
            let peer = role.peer
            let peerKeyTokens: Set<Token> = peer == .initiator ? [.se, .ss] : [.es, .ss]
            var mixed = false
            for (index, message) in messages.enumerated() {
                if message.tokens.contains(where: peerKeyTokens.contains) { mixed = true }
                if message.sender == peer && mixed { return index }
            }
            return nil
        }

        /// True for the one-way patterns (`N`, `K`, `X` and their psk variants): one message, after
        /// which only the initiator sends.
        public var isOneWay: Bool { messages.count == 1 }

        /// The number of `psk` tokens, which is the number of pre-shared keys the handshake needs.
        public var presharedKeyCount: Int { messages.reduce(0) { $0 + $1.tokens.filter { $0 == .psk }.count } }

        /// The pattern in the specification's notation (`-> e` / `<- e, ee`, pre-messages above `...`).
        public var description: String {
            var lines = [String]()
            if !initiatorPreMessage.isEmpty { lines.append("-> " + initiatorPreMessage.map(\.rawValue).joined(separator: ", ")) }
            if !responderPreMessage.isEmpty { lines.append("<- " + responderPreMessage.map(\.rawValue).joined(separator: ", ")) }
            if !lines.isEmpty { lines.append("...") }
            for message in messages {
                lines.append((message.sender == .initiator ? "-> " : "<- ") + message.tokens.map(\.rawValue).joined(separator: ", "))
            }
            return name + ":\n" + lines.map { "  " + $0 }.joined(separator: "\n")
        }

        /// The `pskN` modifier (section 9.2): `psk0` first in the first message, `pskN` last in message N.
        private func insertingPSK(at position: Int) -> HandshakePattern {
            var messages = self.messages
            if position == 0 {
                messages[0] = Message(sender: messages[0].sender, tokens: [.psk] + messages[0].tokens)
            } else {
                messages[position - 1] = Message(sender: messages[position - 1].sender, tokens: messages[position - 1].tokens + [.psk])
            }
            return HandshakePattern(
                unchecked: name, initiatorPreMessage: initiatorPreMessage, responderPreMessage: responderPreMessage,
                messages: messages)
        }
    }
}
