import Foundation
import SFTestSupport
import Testing

/// Runs `sf` with standard input, output and error on a pseudo-terminal, through util-linux
/// `script`, so the commands' terminal-only behaviour (refusals, progress bars) can be checked.
/// The result's stdout is everything the terminal showed (stdout and stderr mixed, LF as CRLF).
func sfOnTerminal(_ arguments: [String]) throws -> ProcessResult {
    let binary = try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests -Xcc -O2)")
    let script = try #require(TestSupport.which("script"), "util-linux script is needed")
    let command = ([binary.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        .joined(separator: " ")
    // -q: no banner; -e: the command's exit status; -f: flush as it comes; /dev/null: no typescript file.
    return try TestSupport.run(script, ["-qefc", command, "/dev/null"])
}

/// True when util-linux `script` is installed (it is part of util-linux, on every CI image).
let terminalAvailable = TestSupport.which("script") != nil

/// The terminal tests need util-linux `script`; without it they are skipped, and fail under CI=true.
@Suite struct TerminalAvailabilityTests {
    @Test func scriptIsInstalledUnderCI() {
        if TestSupport.isCI { #expect(terminalAvailable, "util-linux script is missing") }
        if !terminalAvailable { print("SKIPPED: util-linux script is missing; the terminal tests do not run") }
    }
}

/// `sf keychain get` on values that are not text (issue 9): exact bytes with --raw, never a
/// mangled binary value on a terminal, text unchanged.
@Suite struct KeychainRawValueTests {
    static let binary = Data([0x00, 0xff, 0xfe, 0x0a, 0x80, 0x00, 0xc3, 0x28, 0x41, 0x0d])

    @Test func binaryValueRoundTripsExactly() throws {
        let scratch = try Scratch()
        let kc = ["--keychain", scratch.path("k.db")]
        let name = ["--service", "bin", "--account", "a"]
        // --raw stores standard input exactly (here a value ending in CR, which plain `set` would keep,
        // and one ending in LF, which plain `set` would drop).
        #expect(try sf(["keychain", "set", "--raw"] + name + kc, stdin: Self.binary).status == 0)
        let raw = try sf(["keychain", "get", "--raw"] + name + kc)
        #expect(raw.status == 0)
        #expect(raw.stdout == Self.binary)
        // Not a terminal: a binary value is written exactly, with no newline added, even without --raw.
        let plain = try sf(["keychain", "get"] + name + kc)
        #expect(plain.status == 0)
        #expect(plain.stdout == Self.binary)

        let endsInNewline = Self.binary + Data([0x0a])
        #expect(try sf(["keychain", "set", "--raw"] + name + kc, stdin: endsInNewline).status == 0)
        #expect(try sf(["keychain", "get", "--raw"] + name + kc).stdout == endsInNewline)
        // Without --raw, set still removes one trailing line ending, LF or CRLF, as documented (the
        // value ends in CR, so with the LF added it ends in CRLF).
        #expect(try sf(["keychain", "set"] + name + kc, stdin: endsInNewline).status == 0)
        #expect(try sf(["keychain", "get", "--raw"] + name + kc).stdout == Self.binary.dropLast())
        // A final CR without LF is not a line ending: plain `set` keeps it.
        #expect(try sf(["keychain", "set"] + name + kc, stdin: Self.binary).status == 0)
        #expect(try sf(["keychain", "get", "--raw"] + name + kc).stdout == Self.binary)
    }

    @Test func textValueUnchanged() throws {
        let scratch = try Scratch()
        let kc = ["--keychain", scratch.path("k.db")]
        let name = ["--service", "text", "--account", "a"]
        #expect(try sf(["keychain", "set"] + name + kc, stdin: Data("hunter2 é\n".utf8)).status == 0)
        #expect(try sf(["keychain", "get"] + name + kc).stdout == Data("hunter2 é\n".utf8))
        #expect(try sf(["keychain", "get", "--raw"] + name + kc).stdout == Data("hunter2 é".utf8))
    }

    @Test(.enabled(if: terminalAvailable)) func binaryValueRefusedOnTerminal() throws {
        let scratch = try Scratch()
        let kc = ["--keychain", scratch.path("k.db")]
        let name = ["--service", "bin", "--account", "a"]
        #expect(try sf(["keychain", "set", "--raw"] + name + kc, stdin: Self.binary).status == 0)
        for extra in [[], ["--raw"]] {
            let shown = try sfOnTerminal(["keychain", "get"] + extra + name + kc)
            #expect(shown.status == 1)
            #expect(shown.stdoutText.contains("never written to a terminal"))
            #expect(shown.stdoutText.contains("--raw"))
            #expect(!shown.stdout.contains(0xff) && !shown.stdout.contains(0x00))
        }
        // Text is still printed on a terminal, with its newline.
        #expect(try sf(["keychain", "set"] + ["--service", "t", "--account", "a"] + kc, stdin: Data("secret\n".utf8)).status == 0)
        let text = try sfOnTerminal(["keychain", "get", "--service", "t", "--account", "a"] + kc)
        #expect(text.status == 0)
        #expect(text.stdoutText == "secret\r\n")
    }
}

/// The progress bar of `sf seal --stream`, `sf open` and `sf encrypt`/`decrypt` (one
/// implementation, `ProgressBar`): drawn when standard error is a terminal and the input is a file
/// over 64 MiB, never when standard error is a pipe.
@Suite struct ProgressBarTests {
    /// `[#####                    ] 20%`, as drawn on standard error.
    static func showsBar(_ text: String) -> Bool {
        text.contains(/\r\[[# ]{25}\] \d{1,3}%/)
    }

    /// A 65 MiB sparse file (over the 64 MiB threshold, no disk used), a raw key and an age identity.
    struct Inputs {
        let scratch: Scratch
        let big, small, key, identity, recipient: String

        init() throws {
            scratch = try Scratch()
            big = scratch.path("big.bin")
            #expect(FileManager.default.createFile(atPath: big, contents: nil))
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: big))
            try handle.truncate(atOffset: 65 << 20)
            try handle.close()
            small = try scratch.write("small.bin", Data("small".utf8))
            key = try scratch.write("key", try sf(["random"]).stdout)
            identity = scratch.path("id.txt")
            #expect(try sf(["keygen", "-o", identity]).status == 0)
            recipient = try sf(["keygen", "-y", identity]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// The commands that stream `big`, in order (each one's input is written by an earlier one).
        var commands: [(name: String, arguments: [String])] {
            [
                ("seal --stream", ["seal", "--stream", "--key-file", key, "-o", scratch.path("big.sfs"), big]),
                ("open", ["open", "--key-file", key, "-o", scratch.path("big.opened"), scratch.path("big.sfs")]),
                ("encrypt", ["encrypt", "-r", recipient, "-o", scratch.path("big.age"), big]),
                ("decrypt", ["decrypt", "-i", identity, "-o", scratch.path("big.decrypted"), scratch.path("big.age")]),
            ]
        }
    }

    @Test func noProgressWhenStderrIsNotATerminal() throws {
        let inputs = try Inputs()
        for (name, arguments) in inputs.commands {
            let result = try sf(arguments)
            #expect(result.status == 0, "\(name): \(result.stderrText)")
            #expect(result.stderr.isEmpty, "\(name) wrote to a pipe: \(result.stderrText.prefix(80))")
        }
        #expect(FileManager.default.contentsEqual(atPath: inputs.big, andPath: inputs.scratch.path("big.opened")))
        #expect(FileManager.default.contentsEqual(atPath: inputs.big, andPath: inputs.scratch.path("big.decrypted")))
    }

    @Test(.enabled(if: terminalAvailable)) func progressOnATerminal() throws {
        let inputs = try Inputs()
        for (name, arguments) in inputs.commands {
            let result = try sfOnTerminal(arguments)
            #expect(result.status == 0, "\(name): \(result.stdoutText.suffix(200))")
            #expect(Self.showsBar(result.stdoutText), "\(name) drew no progress bar: \(result.stdoutText.prefix(80))")
            // The bar is erased at the end, so what follows starts on a clean line.
            #expect(result.stdoutText.contains("\r\u{1b}[K"), "\(name) left its bar on screen")
        }
        #expect(FileManager.default.contentsEqual(atPath: inputs.big, andPath: inputs.scratch.path("big.opened")))
        #expect(FileManager.default.contentsEqual(atPath: inputs.big, andPath: inputs.scratch.path("big.decrypted")))
        // Small inputs get no bar, even on a terminal.
        let small = try sfOnTerminal(["seal", "--stream", "--key-file", inputs.key, "-o", inputs.scratch.path("s.sfs"), inputs.small])
        #expect(small.status == 0)
        #expect(!Self.showsBar(small.stdoutText))
    }
}
