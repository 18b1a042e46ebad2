import Foundation
import SFTestSupport
import Testing

/// Issue 21's leftovers: writers refuse up front what readers would refuse or what would clobber
/// their own output, and write nothing.
@Suite struct WriterLimitTests {
    /// `sf seal --kdf pbkdf2 --rounds 4294967295` ran about 25 minutes and wrote a file every reader
    /// refuses (their ceiling is 10,000,000): one range for writers and readers, checked first.
    @Test func sealRefusesPBKDF2RoundsReadersRefuse() throws {
        let scratch = try Scratch()
        let pass = try scratch.write("pass", Data("rounds pass\n".utf8))
        let input = try scratch.write("in", Data("x".utf8))
        for rounds in ["4294967295", "10000001", "0", "999"] {
            let refused = try sf(["seal", "--kdf", "pbkdf2", "--rounds", rounds, "--passphrase-file", pass, "-o", scratch.path("out-\(rounds)"), input])
            #expect(refused.status == 2 && refused.stderrText.contains("--rounds must be 1000...10000000"), "\(rounds): \(refused.stderrText)")
            #expect(!FileManager.default.fileExists(atPath: scratch.path("out-\(rounds)")))
        }
        // The floor itself is written and read back.
        let sealed = try sf(["seal", "--kdf", "pbkdf2", "--rounds", "1000", "--passphrase-file", pass, "-o", scratch.path("ok"), input])
        #expect(sealed.status == 0, "\(sealed.stderrText)")
        let opened = try sf(["open", "--passphrase-file", pass, scratch.path("ok")])
        #expect(opened.status == 0 && opened.stdoutText == "x", "\(opened.stderrText)")
    }

    /// `sf key generate --out X --public-out X` wrote the private key, then failed on the public one:
    /// the same file under two spellings is refused before a key is made, and nothing is written.
    @Test func keyGenerateRefusesOneFileForBothHalves() throws {
        let scratch = try Scratch()
        let directory = URL(fileURLWithPath: scratch.path("d"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: scratch.path("link"), withDestinationPath: directory.path)
        let spellings = [(scratch.path("k.pem"), scratch.path("k.pem")), (scratch.path("k.pem"), scratch.path("d/../k.pem")),
                         (scratch.path("d/k.pem"), scratch.path("link/k.pem"))]
        for (out, publicOut) in spellings {
            let result = try sf(["key", "generate", "--type", "p256", "--out", out, "--public-out", publicOut])
            #expect(result.status == 2 && result.stderrText.contains("--out and --public-out name the same file"), "\(out) \(publicOut): \(result.stderrText)")
            #expect(!FileManager.default.fileExists(atPath: out), "nothing is written")
        }
    }
}
