import Foundation
import SFTestSupport
import SecureCore
import Testing
@testable import AgeEncryption

/// Issue 12 item 2: age 1.3's recipient labels.
@Suite struct RecipientLabelTests {
    @available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *)
    @Test func postQuantumAndClassicalRecipientsDoNotMix() throws {
        let pq = try Age.HybridIdentity().recipient
        let pq2 = try Age.HybridIdentity().recipient
        let classical = Age.X25519Identity().recipient
        let message = "a post-quantum recipient cannot be combined with classical ones (the file would lose its post-quantum protection)"
        #expect(throws: AgeError.invalidRecipientSet(message)) { try Age.encrypt(Data("x".utf8), to: [pq, classical]) }
        #expect(throws: AgeError.invalidRecipientSet(message)) { try Age.encrypt(Data("x".utf8), to: [classical, pq]) }
        // Several post-quantum recipients, or several classical ones, are fine.
        _ = try Age.encrypt(Data("x".utf8), to: [pq, pq2])
        _ = try Age.encrypt(Data("x".utf8), to: [classical, Age.X25519Identity().recipient])
        #expect(pq.labels == ["postquantum"] && classical.labels.isEmpty)
    }

    @Test func aPassphraseIsAlwaysAlone() throws {
        let first = try Age.ScryptRecipient(passphrase: SecretBytes(Data("a".utf8)), workFactor: 2)
        let second = try Age.ScryptRecipient(passphrase: SecretBytes(Data("b".utf8)), workFactor: 2)
        let expected = AgeError.invalidRecipientSet("a passphrase cannot be combined with other recipients")
        #expect(throws: expected) { try Age.encrypt(Data("x".utf8), to: [first, second]) }
        #expect(throws: expected) { try Age.encrypt(Data("x".utf8), to: [Age.X25519Identity().recipient, first]) }
        _ = try Age.encrypt(Data("x".utf8), to: [first])
    }

    @available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *)
    @Test func theCLIRefusesMixing() throws {
        guard let sf = TestSupport.sfBinary else { Issue.record("sf binary not built"); return }
        let pq = try Age.HybridIdentity().recipient.description
        let classical = Age.X25519Identity().recipient.string
        let result = try TestSupport.run(sf.path, ["encrypt", "-r", pq, "-r", classical, "-a"], stdin: Data("x".utf8))
        #expect(result.status != 0)
        #expect(result.stderrText.contains("post-quantum"))
        #expect(result.stdout.isEmpty)
    }
}
