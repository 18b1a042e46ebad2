import Foundation
import SFTestSupport
import SecureCore
import SecureKeychain
import SecureVault
import Testing

/// `sf vault` and `sf keychain set/get --secure`, end to end with the built binary.
@Suite struct VaultCLITests {
    func sf(_ arguments: [String], stdin: Data = Data()) throws -> ProcessResult {
        let binary = try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests -Xcc -O2)")
        return try TestSupport.run(binary.path, arguments, stdin: stdin)
    }

    @Test func initStatusEncryptDecryptChangeRecoverRotate() throws {
        let scratch = try VaultScratch()
        let kc = ["--keychain", scratch.keychainPath]
        let passcode = try scratch.write("passcode", "correct horse\n")
        let wrong = try scratch.write("wrong", "incorrect horse\n")
        let questions = try scratch.write("questions", "First pet?\nStreet you grew up on?\n")
        let answers = try scratch.write("answers", "Rex\nElm Street\n")

        var result = try sf(["vault", "status"] + kc)
        #expect(result.status == 0 && result.stdoutText.contains("not set up"))
        result = try sf(["vault", "encrypt"] + kc + ["--passcode-file", passcode], stdin: Data("x".utf8))
        #expect(result.status == 1 && result.stdout.isEmpty && result.stderrText.contains("no vault is set up"))

        result = try sf(["vault", "init"] + kc + [
            "--passcode-file", passcode, "--questions-file", questions, "--answers-file", answers, "--scrypt-log-n", "10",
        ])
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["vault", "status"] + kc)
        #expect(result.stdoutText.contains("vault: set up") && result.stdoutText.contains("First pet?"))
        #expect(result.stdoutText.contains("current key id: 1"))

        // encrypt/decrypt through stdin/stdout and through files
        result = try sf(["vault", "encrypt"] + kc + ["--passcode-file", passcode], stdin: Data("secret data".utf8))
        #expect(result.status == 0 && result.stdout.prefix(4) == Data("SFV1".utf8))
        let sealed = result.stdout
        result = try sf(["vault", "decrypt"] + kc + ["--passcode-file", passcode], stdin: sealed)
        #expect(result.status == 0 && result.stdoutText == "secret data")
        result = try sf(["vault", "decrypt"] + kc + ["--passcode-file", wrong], stdin: sealed)
        #expect(result.status == 1 && result.stdout.isEmpty && result.stderrText.contains("wrong passcode"))
        try Data("file data".utf8).write(to: URL(fileURLWithPath: scratch.path("plain")))
        result = try sf(["vault", "encrypt"] + kc + ["--passcode-file", passcode, "--context", "c", "-o", scratch.path("sealed"), scratch.path("plain")])
        #expect(result.status == 0)
        result = try sf(["vault", "decrypt"] + kc + ["--passcode-file", passcode, "--context", "c", scratch.path("sealed")])
        #expect(result.stdoutText == "file data")
        result = try sf(["vault", "decrypt"] + kc + ["--passcode-file", passcode, scratch.path("sealed")])
        #expect(result.status == 1 && result.stderrText.contains("authentication failed"))

        // secure keychain items
        result = try sf(["keychain", "set", "--secure"] + kc + ["--service", "mail", "--account", "me", "--passcode-file", passcode], stdin: Data("pw1\n".utf8))
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["keychain", "get"] + kc + ["--service", "mail", "--account", "me"])
        #expect(result.status == 1 && result.stderrText.contains("sealed"))
        result = try sf(["keychain", "get", "--secure"] + kc + ["--service", "mail", "--account", "me", "--passcode-file", passcode])
        #expect(result.status == 0 && result.stdoutText == "pw1\n")

        // change passcode, change questions, recover, rotate
        let second = try scratch.write("second", "battery staple\n")
        result = try sf(["vault", "change-passcode"] + kc + ["--passcode-file", passcode, "--new-passcode-file", second])
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["vault", "decrypt"] + kc + ["--passcode-file", passcode], stdin: sealed)
        #expect(result.status == 1)
        let newQuestions = try scratch.write("q2", "Favourite colour?\n")
        let newAnswers = try scratch.write("a2", "Blue\n")
        result = try sf(["vault", "change-questions"] + kc + ["--passcode-file", second, "--questions-file", newQuestions, "--answers-file", newAnswers])
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["vault", "recover"] + kc + ["--answers-file", answers, "--new-passcode-file", passcode])
        #expect(result.status == 1 && result.stderrText.contains("wrong answers"))
        let third = try scratch.write("third", "third one\n")
        result = try sf(["vault", "recover"] + kc + ["--answers-file", try scratch.write("a3", "  BLUE \n"), "--new-passcode-file", third])
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["vault", "rotate"] + kc + ["--passcode-file", third])
        #expect(result.status == 0 && result.stdoutText.contains("current key id: 2; re-sealed 1"))
        result = try sf(["vault", "decrypt"] + kc + ["--passcode-file", third], stdin: sealed)
        #expect(result.status == 0 && result.stdoutText == "secret data")
        result = try sf(["keychain", "get", "--secure"] + kc + ["--service", "mail", "--account", "me", "--passcode-file", third])
        #expect(result.stdoutText == "pw1\n")
        result = try sf(["vault", "init"] + kc + ["--passcode-file", passcode, "--questions-file", questions, "--answers-file", answers])
        #expect(result.status == 1 && result.stderrText.contains("already set up"))
    }

    /// Issue 18 item 4: `rotate` then `retire-key` silently made a vault-keyed records store
    /// unreadable. Now rotate names the store, retire-key refuses while it still uses the old key,
    /// `sf records rewrap` moves it to the current key, `status` shows which key wraps it, and
    /// `--force` retires anyway with a warning naming the store.
    @Test func rotateRewrapAndRetireWithARecordsStore() throws {
        let scratch = try VaultScratch()
        let kc = ["--keychain", scratch.keychainPath]
        let passcode = try scratch.write("passcode", "correct horse\n")
        let questions = try scratch.write("questions", "First pet?\n")
        let answers = try scratch.write("answers", "Rex\n")
        var result = try sf(["vault", "init"] + kc + [
            "--passcode-file", passcode, "--questions-file", questions, "--answers-file", answers, "--scrypt-log-n", "10",
        ])
        try #require(result.status == 0, "\(result.stderrText)")
        let store = (scratch.keychainPath as NSString).deletingLastPathComponent + "/gifts.db"
        let vault = kc + ["--vault", "--passcode-file", passcode]
        result = try sf(["records", "add", "--store", store, "--collection", "gifts", "--field", "toWhom=Alice", "--sealed", "what=kite"] + vault)
        try #require(result.status == 0, "\(result.stderrText)")
        let id = result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        result = try sf(["records", "status", "--store", store])
        #expect(result.stdoutText.contains("store key 1 (current): wrapped by the vault's application key 1"), "\(result.stdoutText)")

        result = try sf(["vault", "rotate"] + kc + ["--passcode-file", passcode])
        #expect(result.status == 0 && result.stdoutText.contains("not re-wrapped (outside the keychain): \(store), under key id 1"),
                "\(result.stdoutText)")
        result = try sf(["vault", "retire-key", "--key-id", "1"] + kc + ["--passcode-file", passcode])
        #expect(result.status == 1 && result.stderrText.contains(store) && result.stderrText.contains("sf records rewrap --vault"),
                "\(result.stderrText)")

        result = try sf(["records", "rewrap", "--store", store] + vault)
        #expect(result.status == 0 && result.stdoutText == "store key 1: wrapped by the vault's application key 2\n", "\(result.stderrText)")
        result = try sf(["records", "status", "--store", store])
        #expect(result.stdoutText.contains("store key 1 (current): wrapped by the vault's application key 2"), "\(result.stdoutText)")
        result = try sf(["vault", "retire-key", "--key-id", "1"] + kc + ["--passcode-file", passcode])
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["records", "get", "--store", store, id, "what"] + vault)
        #expect(result.status == 0 && result.stdoutText == "kite\n", "\(result.stderrText)")

        // --force retires a key the store still uses, and says which store it leaves unreadable.
        result = try sf(["vault", "rotate"] + kc + ["--passcode-file", passcode])
        try #require(result.status == 0, "\(result.stderrText)")
        result = try sf(["vault", "retire-key", "--key-id", "2", "--force"] + kc + ["--passcode-file", passcode])
        #expect(result.status == 0 && result.stderrText.contains("warning: \(store)"), "\(result.stderrText)")
        result = try sf(["records", "get", "--store", store, id, "what"] + vault)
        #expect(result.status == 1, "\(result.stdoutText)")
    }

    /// Stored questions (the state file may come from someone else) reach the terminal escaped.
    @Test func storedQuestionsAreEscapedInStatus() throws {
        let scratch = try VaultScratch()
        let kc = ["--keychain", scratch.keychainPath]
        let passcode = try scratch.write("passcode", "correct horse\n")
        let questions = try scratch.write("questions", "\u{1B}]0;pwned\u{07}First pet?\u{202E}\n")
        let answers = try scratch.write("answers", "Rex\n")
        let result = try sf(["vault", "init"] + kc + [
            "--passcode-file", passcode, "--questions-file", questions, "--answers-file", answers, "--scrypt-log-n", "10",
        ])
        #expect(result.status == 0, "\(result.stderrText)")
        let status = try sf(["vault", "status"] + kc)
        #expect(status.status == 0 && !status.stdout.contains(0x1B) && !status.stdout.contains(0x07), "\(status.stdoutText)")
        #expect(status.stdoutText.contains(#"\u{1B}]0;pwned\u{7}First pet?\u{202E}"#), "\(status.stdoutText)")
    }

    @Test func usageErrors() throws {
        let result = try sf(["vault", "encrypt", "--bogus"])
        #expect(result.status == 2)
    }

    // Live peer: util-linux setsid runs sf without a controlling terminal, whatever the test run has.
    @Test(.requires(.setsid)) func noTerminalAndNoPasscodeFile() throws {
        // Without a terminal and without --passcode-file, the passcode is never read from elsewhere.
        let setsid = try TestSupport.path(of: .setsid)
        let binary = try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests -Xcc -O2)")
        let scratch = try VaultScratch()
        let questions = try scratch.write("q", "Q?\n"), answers = try scratch.write("a", "A\n")
        let result = try TestSupport.run(setsid, ["-w", binary.path, "vault", "init", "--keychain", scratch.keychainPath,
                                                  "--questions-file", questions, "--answers-file", answers])
        #expect(result.status != 0 && result.stderrText.contains("--passcode-file"), "\(result.stderrText)")
    }
}
