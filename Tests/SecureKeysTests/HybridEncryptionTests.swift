import Crypto
import Foundation
import SFTestSupport
import SecureCore
import SecureKeys
import Testing

@Suite struct HybridEncryptionTests {
    static let recipients: [KeyType] = [.x25519, .p256, .p384, .p521, .rsa2048, .rsa4096]

    @Test(arguments: recipients)
    func roundTripsAnyLength(type: KeyType) throws {
        let key = Fixtures.key(type).key
        for length in [0, 1, 4097, 300_000] {
            let message = SecureRandom.bytes(count: length)
            let sealed = try HybridEncryption.encrypt(message, to: key.publicKey)
            #expect(try HybridEncryption.decrypt(sealed, with: key) == message)
            #expect(try HybridEncryption.claimedSender(of: sealed) == nil)
            // A slice whose indices do not start at zero decrypts the same.
            #expect(try HybridEncryption.decrypt((Data([7, 7, 7]) + sealed).dropFirst(3), with: key) == message)
        }
    }

    @Test(arguments: [(KeyType.x25519, KeyType.x25519), (.p256, .p256), (.p384, .p384), (.p521, .p521), (.rsa2048, .rsa3072)])
    func senderAuthentication(recipientType: KeyType, senderType: KeyType) throws {
        let recipient = Fixtures.key(recipientType).key, sender = Fixtures.key(senderType).key
        let message = Data("from a known sender".utf8)
        let sealed = try HybridEncryption.encrypt(message, to: recipient.publicKey, from: sender)
        #expect(try HybridEncryption.decrypt(sealed, with: recipient, from: sender.publicKey) == message)
        #expect(try HybridEncryption.claimedSender(of: sealed) == sender.publicKey.fingerprint)
        #expect(keyError { _ = try HybridEncryption.decrypt(sealed, with: recipient) } == .senderKeyRequired)
        let impostor = try AsymmetricPrivateKey.generate(senderType == .rsa3072 ? .p256 : senderType).publicKey
        let impostorKey = senderType == .rsa3072 ? Fixtures.otherRSA2048.publicKey : impostor
        #expect(keyError { _ = try HybridEncryption.decrypt(sealed, with: recipient, from: impostorKey) }
            == .unexpectedSender(fingerprint: sender.publicKey.fingerprint.hex))
        let anonymous = try HybridEncryption.encrypt(message, to: recipient.publicKey)
        #expect(keyError { _ = try HybridEncryption.decrypt(anonymous, with: recipient, from: sender.publicKey) } == .notSenderAuthenticated)
    }

    /// A low-order X25519 key (every agreement with it gives the all-zero secret, which anyone
    /// can compute; swift-crypto's HPKE does not refuse it, RFC 9180 section 7.1.4 requires it):
    /// refused as a recipient, as the expected sender, and in a raw key agreement.
    @Test(arguments: TestSupport.lowOrderX25519Points)
    func lowOrderX25519KeysAreRefused(point: Data) throws {
        let lowOrder = AsymmetricPublicKey.x25519(try Curve25519.KeyAgreement.PublicKey(rawRepresentation: point))
        let recipient = Fixtures.key(.x25519).key
        #expect(keyError { _ = try HybridEncryption.encrypt(Data("for no one".utf8), to: lowOrder) }
            == .invalidKey("the recipient key is a low-order X25519 point"))
        // A message claiming the low-order key as its sender (its fingerprint put in the header):
        // refused for the key, before HPKE would key its check with a zero secret.
        let sender = try AsymmetricPrivateKey.generate(.x25519)
        var claiming = try HybridEncryption.encrypt(Data("m".utf8), to: recipient.publicKey, from: sender)
        let at = try #require(claiming.firstRange(of: sender.publicKey.fingerprint.bytes))
        claiming.replaceSubrange(at, with: lowOrder.fingerprint.bytes)
        #expect(try HybridEncryption.claimedSender(of: claiming) == lowOrder.fingerprint)
        #expect(keyError { _ = try HybridEncryption.decrypt(claiming, with: recipient, from: lowOrder) }
            == .invalidKey("the sender key is a low-order X25519 point"))
        #expect(keyError { _ = try recipient.sharedSecret(with: lowOrder) }
            == .invalidKey("key agreement failed: the peer's public key is not a valid point, or the shared secret is zero (a low-order point)"))
    }

    /// An X25519 message whose `enc` is a low-order point, otherwise well formed: its key schedule
    /// is computed here by RFC 9180 (DHKEM(X25519, HKDF-SHA256), ChaCha20-Poly1305, base mode)
    /// from the all-zero DH output anyone knows. swift-crypto's HPKE alone opens it; it is refused.
    @Test func aLowOrderEncapsulatedKeyIsRefused() throws {
        let recipient = Fixtures.key(.x25519).key
        guard case .x25519(let recipientKey) = recipient.publicKey else { throw KeyError.truncated }
        let sealed = try HybridEncryption.encrypt(Data(), to: recipient.publicKey)
        let info = sealed.prefix(sealed.count - 32 - 16)  // before `enc` and the tag of an empty message
        let enc = TestSupport.lowOrderX25519Points[2]
        func labeledExtract(salt: Data, _ label: String, _ ikm: Data, suite: Data) -> Data {
            Data(HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: Data("HPKE-v1".utf8) + suite + Data(label.utf8) + ikm), salt: salt))
        }
        func labeledExpand(_ prk: Data, _ label: String, _ info: Data, _ length: Int, suite: Data) -> Data {
            let labeled = Data([0, UInt8(length)]) + Data("HPKE-v1".utf8) + suite + Data(label.utf8) + info
            return HKDF<SHA256>.expand(pseudoRandomKey: prk, info: labeled, outputByteCount: length).withUnsafeBytes { Data($0) }
        }
        let kem = Data("KEM".utf8) + Data([0x00, 0x20])
        let eaePRK = labeledExtract(salt: Data(), "eae_prk", Data(count: 32), suite: kem)
        let shared = labeledExpand(eaePRK, "shared_secret", enc + recipientKey.rawRepresentation, 32, suite: kem)
        let hpke = Data("HPKE".utf8) + Data([0x00, 0x20, 0x00, 0x01, 0x00, 0x03])
        let context = Data([0x00]) + labeledExtract(salt: Data(), "psk_id_hash", Data(), suite: hpke)
            + labeledExtract(salt: Data(), "info_hash", Data(info), suite: hpke)
        let secret = labeledExtract(salt: shared, "secret", Data(), suite: hpke)
        let box = try ChaChaPoly.seal(
            Data("forged".utf8), using: SymmetricKey(data: labeledExpand(secret, "key", context, 32, suite: hpke)),
            nonce: ChaChaPoly.Nonce(data: labeledExpand(secret, "base_nonce", context, 12, suite: hpke)))
        let forged = info + enc + box.ciphertext + box.tag
        // The control: swift-crypto's HPKE alone opens it, so the key schedule above is right.
        guard case .x25519(let privateKey) = recipient else { throw KeyError.truncated }
        var alone = try HPKE.Recipient(
            privateKey: privateKey, ciphersuite: .Curve25519_SHA256_ChachaPoly, info: Data(info), encapsulatedKey: enc)
        #expect(try alone.open(box.ciphertext + box.tag) == Data("forged".utf8))
        #expect(keyError { _ = try HybridEncryption.decrypt(forged, with: recipient) } == .authenticationFailed)
    }

    @Test(arguments: [KeyType.x25519, .rsa2048])
    func forgedSenderClaimFails(type: KeyType) throws {
        // An attacker authenticates with their own key, then names the expected sender in the header.
        let recipient = Fixtures.key(type).key
        let (expected, attacker) = type == .x25519
            ? (Fixtures.otherX25519, try AsymmetricPrivateKey.generate(.x25519))
            : (Fixtures.rsa3072.key, Fixtures.otherRSA2048)
        var forged = try HybridEncryption.encrypt(Data("forged".utf8), to: recipient.publicKey, from: attacker)
        forged.replaceSubrange(37..<69, with: expected.publicKey.fingerprint.bytes)
        #expect(keyError { _ = try HybridEncryption.decrypt(forged, with: recipient, from: expected.publicKey) } == .authenticationFailed)
    }

    @Test func wrongRecipientAndUnsuitableKeys() throws {
        let sealed = try HybridEncryption.encrypt(Data("x".utf8), to: Fixtures.x25519.key.publicKey)
        #expect(keyError { _ = try HybridEncryption.decrypt(sealed, with: Fixtures.otherX25519) } == .wrongRecipient)
        let rsaSealed = try HybridEncryption.encrypt(Data("x".utf8), to: Fixtures.rsa2048.key.publicKey)
        #expect(keyError { _ = try HybridEncryption.decrypt(rsaSealed, with: Fixtures.otherRSA2048) } == .wrongRecipient)
        #expect(keyError { _ = try HybridEncryption.decrypt(rsaSealed, with: Fixtures.x25519.key) }.map { if case .unrecognizedMessage = $0 { true } else { false } } == true)
        #expect(keyError { _ = try HybridEncryption.encrypt(Data(), to: Fixtures.ed25519.key.publicKey) }.map { if case .wrongKeyType = $0 { true } else { false } } == true)
        #expect(keyError { _ = try HybridEncryption.encrypt(Data(), to: Fixtures.rsa1024.key.publicKey) } == .unsupportedKeySize(1024))
        #expect(keyError { _ = try HybridEncryption.encrypt(Data(), to: Fixtures.p256.key.publicKey, from: Fixtures.x25519.key) }.map { if case .wrongKeyType = $0 { true } else { false } } == true)
        #expect(keyError { _ = try HybridEncryption.decrypt(Data("SFK2".utf8) + sealed.dropFirst(4), with: Fixtures.x25519.key) }.map { if case .unrecognizedMessage = $0 { true } else { false } } == true)
    }

    /// The error a reader must give for a message whose byte `index` was flipped.
    static func expectedFlipError(at index: Int, scheme: UInt8, hasSender: Bool) -> (KeyError) -> Bool {
        switch index {
        case 0..<4: return { if case .unrecognizedMessage = $0 { true } else { false } }
        case 4: return { if case .unrecognizedMessage = $0 { true } else { $0 == .senderKeyRequired || $0 == .notSenderAuthenticated } }
        case 5..<37: return { $0 == .wrongRecipient }
        case 37..<69 where hasSender: return { if case .unexpectedSender = $0 { true } else { false } }
        case 69..<75 where hasSender && scheme == 2, 37..<43 where !hasSender && scheme == 1:
            return { if case .unrecognizedMessage = $0 { true } else { false } }
        default: return { $0 == .authenticationFailed }
        }
    }

    @Test(arguments: [(KeyType.x25519, false), (.p256, true), (.rsa2048, false), (.rsa2048, true)])
    func everyFlippedByteIsRejected(type: KeyType, authenticated: Bool) throws {
        let key = Fixtures.key(type).key
        let sender = type == .rsa2048 ? Fixtures.otherRSA2048 : Fixtures.otherP256
        let message = Data("flip me".utf8)
        let sealed = authenticated
            ? try HybridEncryption.encrypt(message, to: key.publicKey, from: sender)
            : try HybridEncryption.encrypt(message, to: key.publicKey)
        for index in sealed.indices {
            var tampered = sealed
            tampered[index] ^= 0x01
            let error = keyError {
                _ = authenticated
                    ? try HybridEncryption.decrypt(tampered, with: key, from: sender.publicKey)
                    : try HybridEncryption.decrypt(tampered, with: key)
            }
            let matches = Self.expectedFlipError(at: index, scheme: sealed[4], hasSender: authenticated)
            #expect(error.map(matches) == true, "byte \(index): \(String(describing: error))")
        }
    }

    @Test(arguments: [KeyType.x25519, .p521, .rsa2048])
    func everyTruncationIsRejected(type: KeyType) throws {
        let key = Fixtures.key(type).key
        let sealed = try HybridEncryption.encrypt(Data("truncate me".utf8), to: key.publicKey)
        let bodyStart: Int
        switch type {
        case .x25519: bodyStart = 43 + 32
        case .p521: bodyStart = 43 + 133
        default: bodyStart = 37 + 256 + 12
        }
        for length in 0..<sealed.count {
            let error = keyError { _ = try HybridEncryption.decrypt(sealed.prefix(length), with: key) }
            let expected: KeyError = length < bodyStart + 16 ? .truncated : .authenticationFailed
            #expect(error == expected, "length \(length): \(String(describing: error))")
        }
    }

    // Live peer: Python cryptography (with hpke), running the specification independently.
    @Test(.requires(.pythonHPKE), arguments: [KeyType.x25519, .p256, .p384, .p521, .rsa2048])
    func pythonDecryptsFromTheSpecification(type: KeyType) throws {
        let python = try TestSupport.path(of: .pythonHPKE)
        let (pem, key) = Fixtures.key(type)
        let message = SecureRandom.bytes(count: 5000)
        let sealed = try Fixtures.file(try HybridEncryption.encrypt(message, to: key.publicKey), "sfk1")
        let keyFile = try Fixtures.file(Data(pem.utf8), "key")
        let result = try TestSupport.run(python, [peerScript("sfk1_decrypt.py"), keyFile, sealed])
        #expect(result.status == 0 && result.stdout == message, "\(type): \(result.stderrText)")
    }
}
