import AgeEncryption
import Foundation
import SecureCore
import Synchronization
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

/// The writer refuses, before writing anything, every stanza set the reader refuses, so that no file
/// is made that cannot be decrypted; custom `Age.Recipient` types can produce any stanza.
@Suite struct WritableHeaderTests {
    /// Makes `count` stanzas with `arguments` and `body`, as a custom recipient may.
    struct FixedStanzaRecipient: Age.Recipient {
        var arguments: [String]
        var body = Data(count: 32)
        var count = 1

        func wrap(fileKey: SecretBytes) throws(AgeError) -> [Age.Stanza] {
            Array(repeating: Age.Stanza(arguments: arguments, body: body), count: count)
        }
    }

    /// `reason` when encrypting to `recipients` is refused with `invalidRecipientSet` before the
    /// sink (armored, whose first line would come first) receives a byte; nil when it is not refused.
    static func refusal(_ recipients: [any Age.Recipient]) throws -> String? {
        let sink = Age.DataSink()
        do {
            _ = try Age.Encryptor(recipients: recipients, to: sink, armored: true)
            return nil
        } catch AgeError.invalidRecipientSet(let reason) {
            #expect(sink.data.isEmpty)
            return reason
        }
    }

    /// As many recipients as the reader takes stanzas round-trip (opened by the last one, whose
    /// stanza is the last read); one more is refused at encryption.
    @Test func theMostStanzasTheReaderTakesRoundTripAndOneMoreIsRefused() throws {
        let identities = (0..<Age.Header.maximumStanzaCount).map { _ in Age.X25519Identity() }
        let recipients: [any Age.Recipient] = identities.map { $0.recipient }
        let plaintext = Data("to every recipient the reader takes".utf8)
        let file = try Age.encrypt(plaintext, to: recipients)
        #expect(try Age.decrypt(file, identities: [identities[identities.count - 1]]) == plaintext)
        let oneMore: [any Age.Recipient] = recipients + [Age.X25519Identity().recipient as any Age.Recipient]
        #expect(try Self.refusal(oneMore)
            == "more than \(Age.Header.maximumStanzaCount) recipient stanzas (\(Age.Header.maximumStanzaCount + 1) recipients), over the \(Age.Header.maximumStanzaCount) a reader accepts")
        // One recipient's stanzas past the limit are refused alike; one that adds none is not.
        let twoMore: [any Age.Recipient] = Array(recipients.dropLast()) + [FixedStanzaRecipient(arguments: ["custom", "a"], count: 2)]
        #expect(try Self.refusal(twoMore)
            == "more than \(Age.Header.maximumStanzaCount) recipient stanzas (\(Age.Header.maximumStanzaCount) recipients), over the \(Age.Header.maximumStanzaCount) a reader accepts")
        #expect(try Self.refusal(recipients.map { _ in FixedStanzaRecipient(arguments: ["custom", "a"]) } + [FixedStanzaRecipient(arguments: ["custom", "a"], count: 0)]) == nil)
    }

    /// The stanza count is checked as recipients are wrapped: a recipients file of a million lines
    /// (each wrap may be a public-key operation) is refused after one wrap more than a reader takes
    /// stanzas, not after a million.
    @Test func wrappingStopsAtTheReadersStanzaLimit() throws {
        final class Wraps: Sendable {
            let count = Mutex(0)
        }
        struct CountingRecipient: Age.Recipient {
            let wraps: Wraps
            func wrap(fileKey: SecretBytes) throws(AgeError) -> [Age.Stanza] {
                wraps.count.withLock { $0 += 1 }
                return [Age.Stanza(arguments: ["custom", "a"], body: Data(count: 32))]
            }
        }
        let wraps = Wraps()
        let recipients: [any Age.Recipient] = Array(repeating: CountingRecipient(wraps: wraps), count: 1_000_000)
        #expect(try Self.refusal(recipients)
            == "more than \(Age.Header.maximumStanzaCount) recipient stanzas (1000000 recipients), over the \(Age.Header.maximumStanzaCount) a reader accepts")
        #expect(wraps.count.withLock { $0 } == Age.Header.maximumStanzaCount + 1)
    }

    /// An argument must be 1*VCHAR: empty, or with a space, a tab, a line feed or a non-ASCII
    /// character, it would change the header's grammar (`a b` reads back as two arguments).
    @Test(arguments: ["a b", "", "a\tb", "a\nb", "é"])
    func argumentsThatAreNotVisibleASCIIAreRefused(argument: String) throws {
        let expected = "a recipient made a stanza argument that is missing, empty, or not printable ASCII without spaces"
        #expect(try Self.refusal([FixedStanzaRecipient(arguments: ["custom", argument])]) == expected)
        #expect(try Self.refusal([FixedStanzaRecipient(arguments: [argument])]) == expected)
        #expect(try Self.refusal([FixedStanzaRecipient(arguments: ["custom", "ab"])]) == nil)
    }

    @Test func aStanzaWithoutArgumentsIsRefused() throws {
        #expect(try Self.refusal([FixedStanzaRecipient(arguments: [])])
            == "a recipient made a stanza argument that is missing, empty, or not printable ASCII without spaces")
    }

    /// The longest argument line and body the reader takes are written (and read back: no identity
    /// matches, nothing is malformed); one byte more of either is refused.
    @Test func argumentLinesAndBodiesUpToTheReadersCeilings() throws {
        // "-> custom " and the last argument: 16,384 bytes in all.
        let longest = String(repeating: "a", count: 16 * 1024 - 10)
        let largestBody = Data(count: 64 * 1024 / 4 * 3)  // 65,536 base64 characters
        for recipient in [FixedStanzaRecipient(arguments: ["custom", longest]), FixedStanzaRecipient(arguments: ["custom"], body: largestBody)] {
            let file = try Age.encrypt(Data("x".utf8), to: [recipient])
            #expect(throws: AgeError.noIdentityMatched) { try Age.decrypt(file, identities: [Age.X25519Identity()]) }
        }
        #expect(try Self.refusal([FixedStanzaRecipient(arguments: ["custom", longest + "a"])])
            == "a recipient made a stanza line longer than 16384 bytes")
        #expect(try Self.refusal([FixedStanzaRecipient(arguments: ["custom"], body: largestBody + [0])])
            == "a recipient made a stanza body longer than 65536 base64 characters")
    }

    /// 70 stanzas of the largest body make a 4.6 MB header, over the reader's 4 MiB.
    @Test func aHeaderOverTheReadersCeilingIsRefused() throws {
        let reason = try Self.refusal([FixedStanzaRecipient(arguments: ["custom"], body: Data(count: 49_152), count: 70)])
        #expect(reason?.hasSuffix("bytes, over the \(Age.Header.maximumHeaderBytes) a reader accepts") == true, "\(String(describing: reason))")
    }

    /// The decryptor refuses an scrypt stanza among others, so the writer does too.
    @Test func anScryptStanzaAmongOthersIsRefused() throws {
        let scrypt = FixedStanzaRecipient(arguments: ["scrypt", "AAAAAAAAAAAAAAAAAAAAAA", "10"])
        #expect(try Self.refusal([scrypt, Age.X25519Identity().recipient]) == "an scrypt stanza must be the only stanza in the header")
    }
}
