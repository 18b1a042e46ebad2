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

    /// Every stanza within the ceilings (1,024 stanzas of 64 KiB of base64 each) still made an
    /// 84 MB header, read and decoded before its MAC could be checked; the whole header now has
    /// its own ceiling, 4 MiB. And a line is measured by its whole length: a 20 KiB line passed the
    /// 16 KiB ceiling (it was checked a 4 KiB read late), and was reported as the file's end.
    @Test func aHugeHeaderIsRefusedBeforeItsEnd() throws {
        let body = String(repeating: String(repeating: "A", count: 64) + "\n", count: 1_000) + "AA\n"  // 64,002 columns
        let stanza = "-> x\n" + body
        let header = "age-encryption.org/v1\n" + String(repeating: stanza, count: 70)  // 4.6 MB, no "---" line
        do {
            _ = try Age.decrypt(Data(header.utf8), identities: [Age.X25519Identity()])
            Issue.record("a 4.6 MB header was read to its end")
        } catch AgeError.malformedHeader(let reason) {
            #expect(reason == "the header is longer than \(Age.Header.maximumHeaderBytes) bytes", "\(reason)")
        }
        // A whole header around the long line: only its length is wrong.
        let mac = String(repeating: "A", count: 43)
        for length in [16 * 1024 + 1, 20 * 1024] {
            let long = "age-encryption.org/v1\n-> " + String(repeating: "a", count: length - 3) + "\nAAAA\n--- \(mac)\n"
            do {
                _ = try Age.decrypt(Data(long.utf8), identities: [Age.X25519Identity()])
                Issue.record("a header line of \(length) bytes was accepted")
            } catch AgeError.malformedHeader(let reason) {
                #expect(reason == "a header line is longer than 16384 bytes", "\(length): \(reason)")
            }
        }
        // The longest line allowed is read, and a header cut short says so.
        let longest = "age-encryption.org/v1\n-> " + String(repeating: "a", count: 16 * 1024 - 3) + "\nAAAA\n--- \(mac)\n"
        #expect(throws: AgeError.noIdentityMatched) { try Age.decrypt(Data(longest.utf8), identities: [Age.X25519Identity()]) }
        #expect(throws: AgeError.malformedHeader("the file ends inside the header")) {
            try Age.decrypt(Data("age-encryption.org/v1\n-> X25519 abc\n".utf8), identities: [Age.X25519Identity()])
        }
    }
}
