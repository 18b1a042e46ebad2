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
        ] {
            let result = try sf(arguments)
            #expect(result.status == 1, "\(arguments[0]) \(arguments[1]): \(result.stderrText)")
            #expect(result.stderrText.contains("input too large"), "\(arguments[0]) \(arguments[1]): \(result.stderrText)")
        }
    }

    /// Key files (1 MiB) and age recipients and identity files (16 MiB) have ceilings of their own,
    /// far below the 1 GiB of a message, checked while reading: a regular file by its size, standard
    /// input as soon as it passes the ceiling. The error names the file and the ceiling.
    @Test func keyFilesHaveCeilingsOfTheirOwn() throws {
        let scratch = try Scratch()
        let message = try scratch.write("m", Data("m".utf8))
        // Sparse files: no disk space used.
        func sparse(_ name: String, size: Int) -> String {
            let path = scratch.path(name)
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            #expect(truncate(path, off_t(size)) == 0)
            return path
        }
        let key = sparse("big.key", size: (1 << 20) + 1)
        for arguments in [
            ["key", "fingerprint", key],
            ["key", "export", "--in", key, "--format", "jwk"],
            ["key", "encrypt", "--to", key, message],
            ["key", "sign", "--key", key, message],
            ["key", "import", "--tag", "t", "--keychain", scratch.path("k.db"), key],
            ["hash", "--hmac-key-file", key, message],
        ] {
            let result = try sf(arguments)
            #expect(result.status == 1, "\(arguments[1]): \(result.stderrText)")
            #expect(result.stderrText.contains("\(key): too large for a key file (over 1 MiB)"), "\(arguments[1]): \(result.stderrText)")
        }
        // A key file at the ceiling is read (and then is no key).
        let atCeiling = try sf(["key", "fingerprint", sparse("ceiling.key", size: 1 << 20)])
        #expect(atCeiling.status == 1 && !atCeiling.stderrText.contains("too large"), "\(atCeiling.stderrText)")

        let list = sparse("big.txt", size: (16 << 20) + 1)
        for arguments in [["encrypt", "-R", list, message], ["encrypt", "-i", list, message], ["decrypt", "-i", list, message], ["keygen", "-y", list]] {
            let result = try sf(arguments)
            #expect(result.status == 1, "\(arguments): \(result.stderrText)")
            #expect(result.stderrText.contains("\(list): too large for a recipients or identity file (over 16 MiB)"),
                    "\(arguments): \(result.stderrText)")
        }
        let piped = try sf(["keygen", "-y"], stdin: Data(repeating: UInt8(ascii: "#"), count: (16 << 20) + 1))
        #expect(piped.status == 1)
        #expect(piped.stderrText.contains("standard input: too large for a recipients or identity file (over 16 MiB)"), "\(piped.stderrText)")
    }
}
