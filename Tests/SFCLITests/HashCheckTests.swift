import Foundation
import SFTestSupport
import Testing

/// `sf hash -c`: sha256sum-style check files, in both directions with coreutils.
@Suite struct HashCheckTests {
    @Test func checksWhatSha256sumAndSfWrite() throws {
        let scratch = try Scratch()
        let a = try scratch.write("a.txt", Data("alpha\n".utf8))
        let b = try scratch.write("b b.bin", Data([0, 1, 2, 255]))
        // sf's own lines check with sf and with coreutils' sha256sum -c.
        let sums = try sf(["hash", a, b])
        try scratch.write("SUMS", sums.stdout)
        let ok = try sf(["hash", "-c", scratch.path("SUMS")])
        #expect(ok.status == 0 && ok.stdoutText == "\(a): OK\n\(b): OK\n", "\(ok.stderrText)")
        let coreutils = try TestSupport.run("sha256sum", ["-c", scratch.path("SUMS")])
        #expect(coreutils.status == 0 && coreutils.stdoutText == ok.stdoutText)
        // coreutils' lines (binary-mode `*` marker too, CRLF, comments) check with sf.
        let theirs = try TestSupport.run("sha256sum", ["-b", a, b])
        try scratch.write("THEIRS", Data(("# made by sha256sum\r\n" + theirs.stdoutText.replacingOccurrences(of: "\n", with: "\r\n")).utf8))
        #expect(try sf(["hash", "--check", scratch.path("THEIRS")]).stdoutText == ok.stdoutText)
        // From standard input, with another algorithm.
        let sha512 = try sf(["hash", "-a", "sha512", a])
        #expect(try sf(["hash", "-a", "sha512", "-c"], stdin: sha512.stdout).status == 0)
        #expect(try sf(["hash", "-c"], stdin: sha512.stdout).status == 1)  // a sha512 line is not a sha256 line
    }

    /// File names are whatever whoever made the files or the list chose: `-c` printed them raw
    /// (an escape sequence could hide a FAILED, or retitle the window). Names with a backslash or
    /// a newline are written as coreutils writes them, and read back, both ways with sha256sum.
    @Test func namesAreEscapedAndCoreutilsEscapesRoundTrip() throws {
        let scratch = try Scratch()
        let odd = try scratch.write("x\nnew\\line", Data("odd\n".utf8))
        let sums = try sf(["hash", odd])
        #expect(sums.stdoutText.hasPrefix("\\") && sums.stdoutText.hasSuffix("x\\nnew\\\\line\n"), "\(sums.stdoutText.debugDescription)")
        try scratch.write("SUMS", sums.stdout)
        let coreutils = try TestSupport.run("sha256sum", ["-c", scratch.path("SUMS")])
        #expect(coreutils.status == 0, "\(coreutils.stdoutText) \(coreutils.stderrText)")
        let theirs = try TestSupport.run("sha256sum", [odd])
        try scratch.write("THEIRS", theirs.stdout)
        let checked = try sf(["hash", "-c", scratch.path("THEIRS")])
        #expect(checked.status == 0 && !checked.stdoutText.dropLast().contains("\n"), "\(checked.stdoutText.debugDescription)")

        // A list naming a file with an escape sequence in its name: shown escaped.
        let named = "x\u{1B}]0;owned\u{07}"
        try scratch.write("LIST", Data((String(repeating: "0", count: 64) + "  " + named + "\n").utf8))
        let failed = try sf(["hash", "-c", scratch.path("LIST")])
        #expect(failed.status == 1 && failed.stdoutText == "x\\u{1B}]0;owned\\u{7}: FAILED open or read\n", "\(failed.stdoutText.debugDescription)")
    }

    @Test func mismatchesMissingFilesAndMalformedLinesFail() throws {
        let scratch = try Scratch()
        let a = try scratch.write("a", Data("one".utf8))
        let sums = try sf(["hash", a]).stdoutText
        try scratch.write("a", Data("two".utf8))
        let changed = try scratch.write("S1", Data(sums.utf8))
        let failed = try sf(["hash", "-c", changed])
        #expect(failed.status == 1 && failed.stdoutText == "\(a): FAILED\n")
        #expect(failed.stderrText.contains("1 computed checksum did NOT match"))

        let missing = try scratch.write("S2", Data((String(repeating: "0", count: 64) + "  " + scratch.path("nope") + "\n").utf8))
        let unreadable = try sf(["hash", "-c", missing])
        #expect(unreadable.status == 1 && unreadable.stdoutText.contains("nope: FAILED open or read"))

        let garbage = try scratch.write("S3", Data("not a checksum line\nabc  x\n".utf8))
        let malformed = try sf(["hash", "-c", garbage])
        #expect(malformed.status == 1 && malformed.stderrText.contains("2 lines are improperly formatted"))
        #expect(malformed.stderrText.contains("no properly formatted"))

        #expect(try sf(["hash", "-c", "--hmac-key-file", a, changed]).status == 2)
    }

    /// `--hmac-key-file`: every byte of the file is the key (RFC 4231 test case 2); an empty file
    /// is refused and nothing is printed.
    @Test func hmacKeyFile() throws {
        let scratch = try Scratch()
        let data = try scratch.write("data", Data("what do ya want for nothing?".utf8))
        let key = try scratch.write("key", Data("Jefe".utf8))
        let keyed = try sf(["hash", "--hmac-key-file", key, data])
        #expect(keyed.status == 0 && keyed.stdoutText == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843  \(data)\n")
        let empty = try scratch.write("empty", Data())
        let refused = try sf(["hash", "--hmac-key-file", empty, data])
        #expect(refused.status == 1 && refused.stdout.isEmpty && refused.stderrText.contains("\(empty): the HMAC key file is empty"), "\(refused.stderrText)")
    }
}
