import Foundation
import SFTestSupport
import Testing
@testable import SecureKeychain

/// `sf keychain` end to end with the built binary.
@Suite struct KeychainCLITests {
    struct CLI {
        let sf: String
        let path: String

        @discardableResult
        func run(_ arguments: [String], stdin: String = "") throws -> ProcessResult {
            try TestSupport.run(sf, ["keychain"] + arguments + ["--keychain", path], stdin: Data(stdin.utf8))
        }
    }

    func withCLI(_ body: (CLI) throws -> Void) async throws {
        let sf = try FaultTests.sf()
        try await withKeychainDirectory { _, path in try body(CLI(sf: sf.path, path: path)) }
    }

    @Test func setGetListDelete() async throws {
        try await withCLI { cli in
            #expect(try cli.run(["set", "--service", "web", "--account", "ann"], stdin: "pw ann\n").status == 0)
            #expect(try cli.run(["set", "--service", "web", "--account", "bob"], stdin: "pw bob").status == 0)
            #expect(try cli.run(["set", "--service", "mail", "--account", "ann"], stdin: "pw mail\n").status == 0)
            let get = try cli.run(["get", "--service", "web", "--account", "ann"])
            #expect(get.status == 0)
            #expect(get.stdoutText == "pw ann\n")
            #expect(try cli.run(["list"]).stdoutText == "mail\tann\nweb\tann\nweb\tbob\n")
            #expect(try cli.run(["list", "--service", "web"]).stdoutText == "web\tann\nweb\tbob\n")
            #expect(try cli.run(["delete", "--service", "web", "--account", "ann"]).status == 0)
            #expect(try cli.run(["list"]).stdoutText == "mail\tann\nweb\tbob\n")
            #expect(try cli.run(["get", "--service", "web", "--account", "bob"]).stdoutText == "pw bob\n")
        }
    }

    @Test func emptyStandardInputIsRefusedUnlessAllowed() async throws {
        try await withCLI { cli in
            #expect(try cli.run(["set", "--service", "web", "--account", "ann"], stdin: "kept\n").status == 0)
            for empty in ["", "\n", "\r\n"] {
                let refused = try cli.run(["set", "--service", "web", "--account", "ann"], stdin: empty)
                #expect(refused.status == 1 && refused.stderrText.contains("--allow-empty"), "\(refused.stderrText)")
                #expect(try cli.run(["get", "--service", "web", "--account", "ann"]).stdoutText == "kept\n")
            }
            #expect(try cli.run(["set", "--service", "web", "--account", "new"], stdin: "").status == 1)
            #expect(try cli.run(["list"]).stdoutText == "web\tann\n")
            #expect(try cli.run(["set", "--service", "web", "--account", "ann", "--allow-empty"], stdin: "\n").status == 0)
            let get = try cli.run(["get", "--service", "web", "--account", "ann"])
            #expect(get.status == 0 && get.stdoutText == "\n")
        }
    }

    @Test func listJSONHasAttributesAndNoValues() async throws {
        try await withCLI { cli in
            try cli.run(["set", "--service", "web ✓", "--account", "ann"], stdin: "topsecret")
            let list = try cli.run(["list", "--json"])
            #expect(list.status == 0)
            #expect(!list.stdoutText.contains("topsecret"))
            let entries = try #require(try JSONSerialization.jsonObject(with: list.stdout) as? [[String: Any]])
            #expect(entries.count == 1)
            #expect(entries.first?["service"] as? String == "web ✓")
            #expect(entries.first?["account"] as? String == "ann")
            #expect(entries.first?["sealed"] as? Bool == false)
            #expect(entries.first?["created"] is String)
        }
    }

    @Test func failuresExitOneWithAMessageAndNoOutput() async throws {
        try await withCLI { cli in
            for arguments in [["get", "--service", "x", "--account", "y"], ["delete", "--service", "x", "--account", "y"]] {
                let result = try cli.run(arguments)
                #expect(result.status == 1)
                #expect(result.stdout.isEmpty)
                #expect(result.stderrText.contains("no item for service 'x' and account 'y'"))
            }
        }
    }

    @Test func valuesAreNeverTakenFromTheCommandLine() async throws {
        try await withCLI { cli in
            let result = try cli.run(["set", "--service", "s", "--account", "a", "hunter2"])
            #expect(result.status == 2)  // usage error
            #expect(result.stdout.isEmpty)
            #expect(try cli.run(["list"]).stdoutText.isEmpty)
        }
    }

    @Test func importsALegacyFile() async throws {
        try await withCLI { cli in
            let file = URL(fileURLWithPath: cli.path + ".plist")
            try PropertyListSerialization.data(fromPropertyList: LegacyImportTests.legacy, format: .binary, options: 0).write(to: file)
            let result = try TestSupport.run(cli.sf, ["keychain", "import-legacy", file.path, "--keychain", cli.path])
            #expect(result.status == 0)
            #expect(result.stdoutText == "imported 3, skipped 0\n")
            #expect(try cli.run(["get", "--service", "mail", "--account", "ann"]).stdoutText == "ann-pw\n")
            try Data("garbage".utf8).write(to: file)
            let bad = try TestSupport.run(cli.sf, ["keychain", "import-legacy", file.path, "--keychain", cli.path])
            #expect(bad.status == 1)
            #expect(bad.stderrText.contains("not a legacy iMAS keychain file"))
        }
    }

    /// Names come from files anyone who can write them chooses (a legacy file to import, the
    /// keychain itself): their control characters never reach the terminal, in a listing or in an
    /// error (an OSC sequence could set the window title or the clipboard, a CR rewrite a line).
    @Test func namesFromFilesAreEscapedOnTheTerminal() async throws {
        try await withCLI { cli in
            let hostile = "\u{1B}]0;pwned\u{07}\r\u{1B}[2K"
            let escaped = "\\u{1B}]0;pwned\\u{7}\\u{D}\\u{1B}[2K"
            // An imported file whose service is not a dictionary: the error names the service.
            let file = URL(fileURLWithPath: cli.path + ".plist")
            try PropertyListSerialization.data(fromPropertyList: [hostile: 1], format: .binary, options: 0).write(to: file)
            let bad = try TestSupport.run(cli.sf, ["keychain", "import-legacy", file.path, "--keychain", cli.path])
            #expect(bad.status == 1)
            #expect(!bad.stderr.contains(0x1B) && !bad.stderr.contains(0x07) && bad.stderrText.contains(escaped), "\(bad.stderrText)")
            // An item stored under such names (by the library, or by whoever wrote the file).
            let keychain = try Keychain(path: cli.path, configuration: .immediate)
            try keychain.setPassword("x", service: hostile, account: hostile)
            try keychain.close()
            let list = try cli.run(["list"])
            #expect(list.status == 0 && list.stdoutText == "\(escaped)\t\(escaped)\n", "\(list.stdoutText)")
            let missing = try cli.run(["get", "--service", hostile, "--account", "other"])
            #expect(missing.status == 1 && !missing.stderr.contains(0x1B) && missing.stderrText.contains(escaped), "\(missing.stderrText)")
        }
    }

    @Test func defaultLocationIsUnderSFHome() async throws {
        let sf = try FaultTests.sf()
        try await withKeychainDirectory { directory, _ in
            let home = directory.appendingPathComponent("home").path
            let set = try TestSupport.run(sf.path, ["keychain", "set", "--service", "s", "--account", "a"], stdin: Data("v".utf8),
                                          environment: ["SF_HOME": home])
            #expect(set.status == 0)
            #expect(FileManager.default.fileExists(atPath: home + "/keychain.db"))
            #expect(try Keychain(path: home + "/keychain.db").password(service: "s", account: "a") == "v")
        }
    }
}
