import AgeEncryption
import Foundation
import Testing

/// Inputs an attacker or a mistaken user controls: errors never echo secrets, and a hostile header
/// cannot make the reader buffer without bound.
@Suite struct HostileInputTests {
    @Test func anIdentityPassedAsARecipientIsNotEchoed() throws {
        let secret = Age.X25519Identity().secretString
        for text in [secret, secret.lowercased(), "not a key " + secret] {
            do {
                _ = try Age.parseRecipient(text)
                Issue.record("an identity was accepted as a recipient")
            } catch {
                #expect(!"\(error)".contains(secret) && !"\(error)".lowercased().contains(secret.lowercased()))
            }
            do {
                _ = try Age.parseRecipients("# keys\n" + text + "\n")
                Issue.record("an identity was accepted in a recipients file")
            } catch {
                #expect(!"\(error)".lowercased().contains(secret.lowercased()))
            }
        }
    }

    @Test func anEndlessStanzaBodyIsRefused() throws {
        let line = String(repeating: "A", count: 64) + "\n"
        var header = "age-encryption.org/v1\n-> X25519 " + String(repeating: "A", count: 43) + "\n"
        header += String(repeating: line, count: 2_000)  // 128,000 base64 characters
        do {
            _ = try Age.decrypt(Data(header.utf8), identities: [Age.X25519Identity()])
            Issue.record("a 128 KB stanza body was accepted")
        } catch AgeError.malformedHeader(let reason) {
            #expect(reason.contains("stanza body is longer"))
        }
    }
}
