extension Noise.HandshakePattern {
    /// The validity rules of section 7.3 and the PSK rule of section 9.3, checked by simulating
    /// which keys each party has sent and which DHs have been done, token by token.
    struct PatternValidator {
        let pattern: Noise.HandshakePattern
        private var sentE: Set<Noise.Role> = [], sentS: Set<Noise.Role> = []
        private var done: Set<Token> = []
        private var pskProcessed = false

        init(_ pattern: Noise.HandshakePattern) {
            self.pattern = pattern
        }

        mutating func validate() throws(NoiseError) {
            guard !pattern.messages.isEmpty else { throw .invalidPattern("no messages") }
            for (role, pre) in [(Noise.Role.initiator, pattern.initiatorPreMessage), (.responder, pattern.responderPreMessage)] {
                guard pre.isEmpty || pre == [.s] else { throw .invalidPattern("pre-messages may only hold s") }
                if !pre.isEmpty { sentS.insert(role) }
            }
            for (index, message) in pattern.messages.enumerated() {
                guard message.sender == (index % 2 == 0 ? .initiator : .responder) else {
                    throw .invalidPattern("messages must alternate, the initiator first")
                }
                for token in message.tokens { try process(token, by: message.sender) }
                try checkMaySendPayload(message.sender)
            }
            // After the handshake both parties send transport messages (only the initiator if one-way).
            try checkMaySendPayload(.initiator)
            if !pattern.isOneWay { try checkMaySendPayload(.responder) }
        }

        private mutating func process(_ token: Token, by sender: Noise.Role) throws(NoiseError) {
            switch token {
            case .e:
                guard sentE.insert(sender).inserted else { throw .invalidPattern("e sent twice") }
            case .s:
                guard sentS.insert(sender).inserted else { throw .invalidPattern("s sent twice") }
                if pskProcessed, !sentE.contains(sender) { throw .pskWithoutEphemeral }
            case .psk:
                pskProcessed = true
            case .ee, .es, .se, .ss:
                let raw = Array(token.rawValue)
                let initiatorHas = raw[0] == "e" ? sentE.contains(.initiator) : sentS.contains(.initiator)
                let responderHas = raw[1] == "e" ? sentE.contains(.responder) : sentS.contains(.responder)
                guard initiatorHas, responderHas else { throw .invalidPattern("\(token) before both keys are known") }
                guard done.insert(token).inserted else { throw .invalidPattern("\(token) done twice") }
            }
        }

        /// The rules on encrypted payloads: section 7.3's "se needs ee" family, and section 9.3's
        /// PSK rule (no encrypted data after a psk token before the sender's own `e`).
        private func checkMaySendPayload(_ sender: Noise.Role) throws(NoiseError) {
            if pskProcessed, !sentE.contains(sender) { throw .pskWithoutEphemeral }
            switch sender {
            case .initiator:
                if done.contains(.se), !done.contains(.ee) { throw .invalidPattern("initiator payload after se without ee") }
                if done.contains(.ss), !done.contains(.es) { throw .invalidPattern("initiator payload after ss without es") }
            case .responder:
                if done.contains(.es), !done.contains(.ee) { throw .invalidPattern("responder payload after es without ee") }
                if done.contains(.ss), !done.contains(.se) { throw .invalidPattern("responder payload after ss without se") }
            }
        }
    }
}
