import Foundation
import SFTestSupport
import Testing

/// Issue 12 item 10: when scrypt's memory cannot be had, the message says so.
@Suite struct ResourceTests {
    @Test func scryptOutOfMemoryIsAReadableError() throws {
        let scratch = try Scratch()
        let passphrase = try scratch.write("pw", Data("pw\n".utf8))
        // logN 22, r 8, p 1: within every ceiling, needs 4 GiB; the address space is capped at 600 MB.
        let header = try scratch.write("h", Data("SFE1".utf8) + Data([0x01, 0x01, 0x16, 0x08, 0x01]) + Data(count: 60))
        let binary = try #require(TestSupport.sfBinary)
        let result = try TestSupport.run(
            "/bin/sh", ["-c", "ulimit -v 600000 && exec \"$0\" open --passphrase-file \"$1\" \"$2\"", binary.path, passphrase, header])
        #expect(result.status == 1)
        #expect(result.stderrText.contains("out of memory"), "\(result.stderrText)")
        #expect(!result.stderrText.contains("underlyingCoreCryptoError"))
        #expect(result.stdout.isEmpty)
    }
}

/// Issue 12 item 11: huge inputs and counts are refused or streamed, never a crash.
@Suite struct HugeInputTests {
    @Test func absurdRandomCountsAreUsageErrorsAndLargeOnesStream() throws {
        for arguments in [["random", "-n", "1000000000000"], ["random", "--string", "1000000000000"]] {
            let result = try sf(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stdout.isEmpty)
        }
        // Several chunks: the streamed encodings decode to exactly the requested count.
        let count = 300_001
        let hex = try sf(["random", "-n", String(count)])
        #expect(hex.status == 0 && hex.stdoutText.trimmingCharacters(in: .newlines).count == 2 * count)
        for format in ["base64", "base64url"] {
            let encoded = try sf(["random", "-n", String(count), "--format", format]).stdoutText.trimmingCharacters(in: .newlines)
            var standard = encoded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while standard.count % 4 != 0 { standard += "=" }
            #expect(Data(base64Encoded: standard)?.count == count, "\(format)")
        }
        #expect(try sf(["random", "-n", String(count), "--format", "raw"]).stdout.count == count)
        let string = try sf(["random", "--string", "100000", "--alphabet", "digits"]).stdoutText.trimmingCharacters(in: .newlines)
        #expect(string.count == 100_000 && string.allSatisfy(\.isNumber))
    }

    @Test func inputsOverTheInMemoryLimitAreRefused() throws {
        let scratch = try Scratch()
        let huge = scratch.path("huge")
        // A sparse file of 1.1 GiB: no disk space used, refused by its size before any read.
        #expect(FileManager.default.createFile(atPath: huge, contents: nil))
        #expect(truncate(huge, 1_100 << 20) == 0)
        let key = try scratch.write("key", Data(try sf(["random"]).stdoutText.utf8))
        #expect(try sf(["key", "generate", "--type", "x25519", "--out", scratch.path("k.pem")]).status == 0)
        for arguments in [
            ["open", "--key-file", key, huge],
            ["seal", "--key-file", key, huge],
            ["key", "decrypt", "--key", scratch.path("k.pem"), huge],
            ["hash", "--hmac-key-file", huge, key],
        ] {
            let result = try sf(arguments)
            #expect(result.status == 1, "\(arguments[0]) \(arguments[1]): \(result.stderrText)")
            #expect(result.stderrText.contains("input too large"), "\(arguments[0]) \(arguments[1]): \(result.stderrText)")
        }
    }
}
