import Foundation
import SFTestSupport
import Testing

/// Issue 12 item 18: messages a person can act on, without library internals.
@Suite struct MessageTests {
    @Test func costsNoReaderAcceptsAreUsageErrors() throws {
        let scratch = try Scratch()
        let passphrase = try scratch.write("pw", Data("pw\n".utf8))
        let input = try scratch.write("in", Data("hi".utf8))
        // Costs too cheap to guess are refused too.
        for arguments in [
            ["encrypt", "-p", "--work-factor", "40", "--passphrase-file", passphrase, input],
            ["seal", "--log-n", "40", "--passphrase-file", passphrase, input],
            ["encrypt", "-p", "--work-factor", "9", "--passphrase-file", passphrase, input],
            ["seal", "--log-n", "1", "--passphrase-file", passphrase, input],
        ] {
            let result = try sf(arguments)
            #expect(result.status == 2, "\(arguments[0]): \(result.stderrText)")
            #expect(result.stderrText.contains("must be 10...22"))
            #expect(result.stdout.isEmpty)
        }
    }

    @Test func malformedDERNamesNoSwiftASN1SourceFile() throws {
        let scratch = try Scratch()
        let der = try scratch.write("bad.der", Data([0x30, 0x82, 0x01, 0x00, 0x02, 0x01]))
        let pem = try scratch.write("bad.pem", Data("-----BEGIN PUBLIC KEY-----\nMAMCAQA=\n-----END PUBLIC KEY-----\n".utf8))
        for file in [der, pem] {
            let result = try sf(["key", "fingerprint", file])
            #expect(result.status == 1)
            #expect(result.stderrText.contains("malformed DER"))
            #expect(!result.stderrText.contains(".swift:") && !result.stderrText.contains("SwiftASN1"), "\(result.stderrText)")
        }
    }

    @Test func anOversizedSignatureFileIsRefusedBeforeDecoding() throws {
        let scratch = try Scratch()
        #expect(try sf(["key", "generate", "--type", "ed25519", "--out", scratch.path("k.pem"), "--public-out", scratch.path("k.pub")]).status == 0)
        let message = try scratch.write("m", Data("m".utf8))
        let huge = try scratch.write("sig", Data(String(repeating: "QUFB", count: 50_000).utf8))
        let result = try sf(["key", "verify", "--key", scratch.path("k.pub"), "--signature", huge, message])
        #expect(result.status == 1 && result.stderrText.contains("too large for a signature"))
    }
}
