import Crypto
import Foundation
import SFTestSupport
import SecureChannel
import Testing

@Suite struct ProtocolNameTests {
    @Test func parsesAndPrintsSupportedNames() throws {
        for text in ["Noise_XX_25519_ChaChaPoly_SHA256", "Noise_IKpsk2_25519_AESGCM_SHA512", "Noise_NNpsk0+psk2_25519_AESGCM_SHA256"] {
            let name = try Noise.ProtocolName(parsing: text)
            #expect(name.description == text)
            #expect(Noise.ProtocolName(text) == name)
        }
        let xx = try Noise.ProtocolName(parsing: "Noise_XX_25519_ChaChaPoly_SHA256")
        #expect(xx.pattern == .xx && xx.cipher == .chaChaPoly && xx.hash == .sha256 && xx.dh == .curve25519)
    }

    @Test func rejectsUnsupportedAndMalformedNames() {
        let cases: [(String, NoiseError)] = [
            ("Noise_XX_448_ChaChaPoly_SHA256", .unsupportedDH("448")),
            ("Noise_XX_25519_ChaChaPoly_BLAKE2b", .unsupportedHash("BLAKE2b")),
            ("Noise_XX_25519_ChaChaPoly_BLAKE2s", .unsupportedHash("BLAKE2s")),
            ("Noise_XX_25519_AESCBC_SHA256", .unsupportedCipher("AESCBC")),
            ("Noise_XXfallback_25519_ChaChaPoly_SHA256", .unsupportedPattern("XXfallback")),
            ("Noise_ZZ_25519_ChaChaPoly_SHA256", .unsupportedPattern("ZZ")),
            ("Noise_XXpsk_25519_ChaChaPoly_SHA256", .invalidModifier("psk")),
            ("Noise_XXpsk4_25519_ChaChaPoly_SHA256", .invalidModifier("psk4")),
            ("Noise_XXpsk01_25519_ChaChaPoly_SHA256", .invalidModifier("psk01")),
            ("Noise_XXpsk1+psk1_25519_ChaChaPoly_SHA256", .invalidModifier("psk1")),
            ("Noise_XXpsk1+_25519_ChaChaPoly_SHA256", .invalidModifier("")),
            ("Noise_XX_25519_ChaChaPoly", .malformedProtocolName("Noise_XX_25519_ChaChaPoly")),
            ("Noyse_XX_25519_ChaChaPoly_SHA256", .malformedProtocolName("Noyse_XX_25519_ChaChaPoly_SHA256")),
            ("Noise__25519_ChaChaPoly_SHA256", .malformedProtocolName("Noise__25519_ChaChaPoly_SHA256")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try Noise.ProtocolName(parsing: text) }
        }
    }

    @Test func everyFundamentalPatternIsValid() throws {
        #expect(Noise.HandshakePattern.fundamentalPatternNames.count == 38)
        for name in Noise.HandshakePattern.fundamentalPatternNames {
            let pattern = try Noise.HandshakePattern(named: name)
            #expect(pattern.isOneWay == (name.count == 1))
            for position in 0...pattern.messages.count {
                #expect(try Noise.HandshakePattern(named: "\(name)psk\(position)").presharedKeyCount == 1)
            }
        }
        #expect(Noise.HandshakePattern.xx.description.contains("<- e, ee, s, es"))
    }
}

@Suite struct HandshakePatternRuleTests {
    typealias M = Noise.HandshakePattern.Message

    @Test func pskValidityRule() {
        // The initiator sends an encrypted payload after psk but before its first e.
        #expect(throws: NoiseError.pskWithoutEphemeral) {
            try Noise.HandshakePattern(
                name: "bad", messages: [M(sender: .initiator, tokens: [.psk]), M(sender: .responder, tokens: [.e])])
        }
        // The responder never sends e, yet sends after the psk token.
        #expect(throws: NoiseError.pskWithoutEphemeral) {
            try Noise.HandshakePattern(
                name: "bad", messages: [M(sender: .initiator, tokens: [.e, .psk]), M(sender: .responder, tokens: [])])
        }
        // The same shape with e in place is valid (NNpsk2-like).
        #expect(throws: Never.self) {
            try Noise.HandshakePattern(
                name: "ok", messages: [M(sender: .initiator, tokens: [.e]), M(sender: .responder, tokens: [.e, .ee, .psk])])
        }
    }

    @Test func section73Rules() {
        let cases: [[M]] = [
            [M(sender: .initiator, tokens: [.ee])],  // DH before the keys exist
            [M(sender: .initiator, tokens: [.e, .e])],  // e twice
            [M(sender: .initiator, tokens: [.e]), M(sender: .responder, tokens: [.e, .ee, .ee])],  // DH twice
            [M(sender: .responder, tokens: [.e])],  // responder first
            [M(sender: .initiator, tokens: [.e, .s]), M(sender: .responder, tokens: [.e, .se])],  // se without ee
            [],
        ]
        for messages in cases {
            #expect(throws: NoiseError.self) { try Noise.HandshakePattern(name: "bad", messages: messages) }
        }
    }
}

@Suite struct CipherStateTests {
    @Test func nonceExhaustionIsEnforced() throws {
        for cipher in Noise.CipherFunction.allCases {
            let sender = Noise.CipherState(cipher: cipher), receiver = Noise.CipherState(cipher: cipher)
            let key = SymmetricKey(size: .bits256)
            sender.initializeKey(key)
            receiver.initializeKey(key)
            sender.setNonce(.max - 1)
            receiver.setNonce(.max - 1)
            let last = try sender.encrypt(withAD: Data(), plaintext: Data("last".utf8))
            #expect(try receiver.decrypt(withAD: Data(), ciphertext: last) == Data("last".utf8))
            #expect(sender.nonce == .max)
            #expect(throws: NoiseError.nonceExhausted) { try sender.encrypt(withAD: Data(), plaintext: Data()) }
            #expect(throws: NoiseError.nonceExhausted) { try receiver.decrypt(withAD: Data(), ciphertext: last) }
            #expect(sender.nonce == .max)
        }
    }

    @Test func failedDecryptionLeavesTheNonce() throws {
        let sender = Noise.CipherState(cipher: .aesGCM), receiver = Noise.CipherState(cipher: .aesGCM)
        let key = SymmetricKey(size: .bits256)
        sender.initializeKey(key)
        receiver.initializeKey(key)
        var message = try sender.encrypt(withAD: Data("ad".utf8), plaintext: Data("hello".utf8))
        message[0] ^= 1
        #expect(throws: NoiseError.decryptionFailed) { try receiver.decrypt(withAD: Data("ad".utf8), ciphertext: message) }
        #expect(throws: NoiseError.decryptionFailed) { try receiver.decrypt(withAD: Data("ad".utf8), ciphertext: Data(count: 15)) }
        #expect(receiver.nonce == 0)
        message[0] ^= 1
        #expect(throws: NoiseError.decryptionFailed) { try receiver.decrypt(withAD: Data("other".utf8), ciphertext: message) }
        #expect(try receiver.decrypt(withAD: Data("ad".utf8), ciphertext: message) == Data("hello".utf8))
    }

    @Test func withoutKeyThePlaintextPassesThrough() throws {
        let state = Noise.CipherState(cipher: .chaChaPoly)
        #expect(!state.hasKey)
        #expect(try state.encrypt(withAD: Data(), plaintext: Data("x".utf8)) == Data("x".utf8))
    }
}

@Suite struct HandshakeStateTests {
    static let protocols = [
        "Noise_NN_25519_ChaChaPoly_SHA256", "Noise_NK_25519_AESGCM_SHA256", "Noise_XX_25519_ChaChaPoly_SHA512",
        "Noise_IK_25519_AESGCM_SHA512", "Noise_XK_25519_ChaChaPoly_SHA256", "Noise_KK_25519_AESGCM_SHA256",
        "Noise_XXpsk3_25519_ChaChaPoly_SHA256", "Noise_IKpsk2_25519_ChaChaPoly_SHA256", "Noise_NNpsk0_25519_AESGCM_SHA256",
        "Noise_X1X1_25519_ChaChaPoly_SHA256", "Noise_X_25519_ChaChaPoly_SHA256",
    ]

    @Test(arguments: protocols) func completesWithSharedHandshakeHash(_ name: String) throws {
        let pair = try NoisePair(name)
        try pair.run()
        #expect(pair.initiator.handshakeHash == pair.responder.handshakeHash)
        #expect(try pair.initiator.transportState().handshakeHash == pair.responder.handshakeHash)
        let pattern = pair.initiator.protocolName.pattern
        if pattern.messages.contains(where: { $0.sender == .responder && $0.tokens.contains(.s) }) || pattern.responderPreMessage == [.s] {
            #expect(try pair.initiator.transportState().remoteStaticKey?.rawRepresentation == NoisePair.responderStatic.publicKey.rawRepresentation)
        }
    }

    /// Flipping any bit of any byte of any handshake message makes the handshake or the first
    /// transport messages fail; so does every truncation.
    @Test(arguments: protocols) func everyFlippedByteAndTruncationIsRejected(_ name: String) throws {
        let count = try Noise.ProtocolName(parsing: name).pattern.messages.count
        for index in 0..<count {
            var length = 0
            try NoisePair(name).run { i, message in
                if i == index { length = message.count }
                return message
            }
            for position in 0..<length {
                #expect(throws: NoiseError.self, "\(name) message \(index) byte \(position)") {
                    try NoisePair(name).run { i, message in
                        guard i == index else { return message }
                        var flipped = message
                        flipped[flipped.startIndex + position] ^= 0x40
                        return flipped
                    }
                }
            }
            for cut in 0..<length {
                #expect(throws: NoiseError.self, "\(name) message \(index) cut to \(cut)") {
                    try NoisePair(name).run { i, message in i == index ? message.prefix(cut) : message }
                }
            }
        }
    }

    /// A low-order X25519 point gives the all-zero DH output whatever the other key, a secret
    /// anyone knows: as the ephemeral key in a message (either side's), or as a static key known
    /// in advance, it fails the handshake with `invalidPublicKey` (section 12.1 allows the error).
    @Test(arguments: TestSupport.lowOrderX25519Points) func lowOrderKeysAreRefused(_ point: Data) throws {
        for sender in 0..<2 {
            #expect(throws: NoiseError.invalidPublicKey, "message \(sender)") {
                try NoisePair("Noise_XX_25519_ChaChaPoly_SHA256").run { i, message in i == sender ? point + message.dropFirst(32) : message }
            }
        }
        let initiator = try Noise.HandshakeState(
            protocolName: try Noise.ProtocolName(parsing: "Noise_NK_25519_ChaChaPoly_SHA256"), role: .initiator,
            remoteStaticKey: try Curve25519.KeyAgreement.PublicKey(rawRepresentation: point))
        #expect(throws: NoiseError.invalidPublicKey) { try initiator.writeMessage() }
    }

    @Test func wrongPrologueFails() throws {
        for name in ["Noise_NN_25519_ChaChaPoly_SHA256", "Noise_XX_25519_AESGCM_SHA256", "Noise_IK_25519_ChaChaPoly_SHA256"] {
            let pair = try NoisePair(name, initiatorPrologue: Data("v1".utf8), responderPrologue: Data("v2".utf8))
            #expect(throws: NoiseError.decryptionFailed) { try pair.run() }
        }
    }

    @Test func wrongStaticKeyFails() throws {
        let stranger = Curve25519.KeyAgreement.PrivateKey().publicKey
        for name in ["Noise_IK_25519_ChaChaPoly_SHA256", "Noise_NK_25519_AESGCM_SHA256", "Noise_XK_25519_ChaChaPoly_SHA512", "Noise_KK_25519_ChaChaPoly_SHA256"] {
            let pair = try NoisePair(name, initiatorKnowsResponderAs: stranger)
            #expect(throws: NoiseError.decryptionFailed, "\(name)") { try pair.run() }
        }
    }

    @Test func oversizeMessagesAreRefusedWithoutChangingState() throws {
        let pair = try NoisePair("Noise_XX_25519_ChaChaPoly_SHA256")
        // Message 1 of XX: 32 bytes of e, then the payload in clear: 65,503 bytes is the most.
        #expect(throws: NoiseError.messageTooLong(65_536)) { try pair.initiator.writeMessage(payload: Data(count: 65_504)) }
        let first = try pair.initiator.writeMessage(payload: Data(count: 65_503))
        #expect(first.count == 65_535)
        _ = try pair.responder.readMessage(first)
        #expect(throws: NoiseError.messageTooLong(65_536)) { try pair.initiator.readMessage(Data(count: 65_536)) }
        let pair2 = try NoisePair("Noise_NN_25519_ChaChaPoly_SHA256")
        try pair2.run()
        let sending = try pair2.initiator.transportState()
        #expect(throws: NoiseError.messageTooLong(65_536)) { try sending.writeMessage(Data(count: 65_520)) }
        #expect(sending.sending?.nonce == 1)
        let largest = try sending.writeMessage(Data(count: 65_519))
        #expect(largest.count == 65_535)
        #expect(throws: NoiseError.messageTooLong(65_536)) { try pair2.responder.transportState().readMessage(Data(count: 65_536)) }
    }

    @Test func presharedKeysAndStaticKeysAreChecked() throws {
        let ikpsk2 = try Noise.ProtocolName(parsing: "Noise_IKpsk2_25519_ChaChaPoly_SHA256")
        let key = Curve25519.KeyAgreement.PrivateKey()
        #expect(throws: NoiseError.wrongPresharedKeyCount(expected: 1, given: 0)) {
            try Noise.HandshakeState(protocolName: ikpsk2, role: .initiator, staticKey: key, remoteStaticKey: key.publicKey)
        }
        #expect(throws: NoiseError.invalidPresharedKeyLength) {
            try Noise.HandshakeState(
                protocolName: ikpsk2, role: .initiator, staticKey: key, remoteStaticKey: key.publicKey,
                presharedKeys: [SymmetricKey(size: .bits128)])
        }
        #expect(throws: NoiseError.missingRemoteStaticKey) {
            try Noise.HandshakeState(
                protocolName: ikpsk2, role: .initiator, staticKey: key, presharedKeys: [SymmetricKey(size: .bits256)])
        }
        #expect(throws: NoiseError.missingLocalStaticKey) {
            try Noise.HandshakeState(protocolName: Noise.ProtocolName(pattern: .xx, cipher: .aesGCM, hash: .sha256), role: .responder)
        }
        // Different psks: the first message already fails (psk2 in IKpsk2 is mixed in message 2).
        let name = try Noise.ProtocolName(parsing: "Noise_NNpsk0_25519_ChaChaPoly_SHA256")
        let a = try Noise.HandshakeState(protocolName: name, role: .initiator, presharedKeys: [SymmetricKey(size: .bits256)])
        let b = try Noise.HandshakeState(protocolName: name, role: .responder, presharedKeys: [SymmetricKey(size: .bits256)])
        #expect(throws: NoiseError.decryptionFailed) { try b.readMessage(a.writeMessage()) }
    }

    @Test func turnsAbortsAndCompletionAreEnforced() throws {
        let pair = try NoisePair("Noise_NN_25519_ChaChaPoly_SHA256")
        #expect(throws: NoiseError.outOfTurn) { try pair.responder.writeMessage() }
        #expect(throws: NoiseError.handshakeIncomplete) { try pair.initiator.transportState() }
        #expect(throws: NoiseError.messageTooShort) { try pair.responder.readMessage(Data(count: 31)) }
        #expect(throws: NoiseError.handshakeAborted) { try pair.responder.readMessage(Data(count: 32)) }
        let done = try NoisePair("Noise_NN_25519_ChaChaPoly_SHA256")
        try done.run()
        #expect(throws: NoiseError.handshakeAlreadyComplete) { try done.initiator.writeMessage() }
        let oneWay = try NoisePair("Noise_N_25519_ChaChaPoly_SHA256")
        try oneWay.run()
        #expect(throws: NoiseError.oneWayPattern) { try oneWay.responder.transportState().writeMessage(Data()) }
    }

    @Test func rekeyKeepsBothSidesInStep() throws {
        let pair = try NoisePair("Noise_XX_25519_AESGCM_SHA256")
        try pair.run()
        let (a, b) = (try pair.initiator.transportState(), try pair.responder.transportState())
        let before = try a.writeMessage(Data("same".utf8))
        _ = try b.readMessage(before)
        a.rekeySending()
        b.rekeyReceiving()
        let after = try a.writeMessage(Data("same".utf8))
        #expect(try b.readMessage(after) == Data("same".utf8))
        a.rekeySending()
        #expect(throws: NoiseError.decryptionFailed) { try b.readMessage(a.writeMessage(Data("x".utf8))) }
    }
}
