import Foundation
import SFTestSupport
import SecureFoundation
import Testing

/// One SSH key codec (SecureCore's `SSHPublicKey`) behind both modules that read OpenSSH keys: a key
/// it refuses reaches the caller as the codec's own `SSHPublicKeyError`, inside a structured case of
/// each module's error, never as a sentence to parse.
@Suite struct SSHKeyErrorTests {
    /// `ssh-ed25519` lines whose key is not an Ed25519 point, and a truncated blob.
    static let refused: [(line: String, error: SSHPublicKeyError)] = [
        (TestSupport.sshEd25519Line(TestSupport.ed25519Encoding(y: [2, 0, 0, 0])), .invalidEd25519Point(.notOnCurve)),
        (TestSupport.sshEd25519Line(TestSupport.ed25519Encoding(y: [3, 0, 0, 0], sign: 0).prefix(31)),
         .wrongKeyLength(keyType: "ssh-ed25519", expected: 32, found: 31)),
        ("ssh-ed25519 AAAA", .truncated),
        ("ssh-dss AAAAB3NzaC1kc3M=", .unsupportedKeyType("ssh-dss")),
    ]

    @Test(arguments: 0..<refused.count)
    func codecErrorsSurfaceAsTheStructuredCase(index: Int) throws {
        let (line, expected) = Self.refused[index]
        var ageError: AgeError?
        do { _ = try Age.parseRecipient(line) } catch { ageError = error }
        var keyError: KeyError?
        do { _ = try KeyImport.publicKey(from: Data(line.utf8)) } catch { keyError = error }
        // age skips a well-formed key of a type it does not read when the line names that type.
        if case .unsupportedKeyType = expected {
            #expect(ageError == .unsupportedKeyType(expected.description))
        } else {
            #expect(ageError == .sshKey(expected))
            #expect(throws: AgeError.sshKey(expected, line: 2)) { try Age.parseRecipients("# keys\n" + line + "\n") }
        }
        #expect(keyError == .sshKey(expected))
        // The sentence a person reads is the codec's, with no internal detail.
        for text in [ageError?.description, keyError?.description].compactMap({ $0 }) {
            #expect(text.contains(expected.description), "\(text)")
            #expect(!text.contains(".swift"), "\(text)")
        }
    }
}
