import Foundation
import SFTestSupport
import Testing

/// Issue 12, item 17: a keychain on a read-only file system is read by the read-only commands, and
/// every change is refused with a clear error that leaves the file as it was. The test mounts a
/// read-only view of its scratch directory in a mount namespace that only its child process sees.
@Suite struct ReadOnlyKeychainTests {
    /// Runs `sf arguments` (where `{ro}` stands for the read-only view of `scratch`) in a private
    /// mount namespace in which that view is mounted read-only.
    static func sfOnReadOnlyView(_ scratch: Scratch, _ arguments: [String], stdin: Data = Data()) throws -> ProcessResult {
        let sf = try #require(TestSupport.sfBinary, "the sf binary is built with the tests").path
        let view = scratch.path("ro")
        try FileManager.default.createDirectory(atPath: view, withIntermediateDirectories: true)
        let script = "mount --bind \"$1\" \"$2\" && mount -o remount,ro,bind \"$2\" && shift 2 && exec \"$@\""
        return try TestSupport.run(
            try TestSupport.path(of: .unshare),
            ["-m", "--", "sh", "-c", script, "sh", scratch.path("rw"), view, sf]
                + arguments.map { $0.replacingOccurrences(of: "{ro}", with: view) },
            stdin: stdin)
    }

    // Each step runs one short sf process; the limit is many times what they take on a loaded machine.
    @Test(.requires(.unshare), .requiresSFBinary, .hangBackstop)
    func readOnlyCommandsWorkAndWritesAreRefused() throws {
        let scratch = try Scratch()
        try FileManager.default.createDirectory(atPath: scratch.path("rw"), withIntermediateDirectories: true)
        let keychain = scratch.path("rw/keychain.db")
        #expect(try sf(["keychain", "set", "--keychain", keychain, "--service", "mail", "--account", "alice"], stdin: Data("pw-a".utf8)).status == 0)
        #expect(try sf(["keychain", "set", "--keychain", keychain, "--service", "web", "--account", "bob"], stdin: Data("pw-b".utf8)).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: keychain))

        let list = try Self.sfOnReadOnlyView(scratch, ["keychain", "list", "--keychain", "{ro}/keychain.db"])
        #expect(list.status == 0, "\(list.stderrText)")
        #expect(list.stdoutText.contains("mail\talice") && list.stdoutText.contains("web\tbob"))
        let get = try Self.sfOnReadOnlyView(scratch, ["keychain", "get", "--keychain", "{ro}/keychain.db", "--service", "mail", "--account", "alice"])
        #expect(get.status == 0, "\(get.stderrText)")
        #expect(get.stdoutText == "pw-a\n")
        let status = try Self.sfOnReadOnlyView(scratch, ["vault", "status", "--keychain", "{ro}/keychain.db"])
        #expect(status.status == 0, "\(status.stderrText)")

        let set = try Self.sfOnReadOnlyView(
            scratch, ["keychain", "set", "--keychain", "{ro}/keychain.db", "--service", "mail", "--account", "carol"], stdin: Data("x".utf8))
        #expect(set.status == 1)
        #expect(set.stderrText.contains("read-only"), "\(set.stderrText)")
        let delete = try Self.sfOnReadOnlyView(scratch, ["keychain", "delete", "--keychain", "{ro}/keychain.db", "--service", "mail", "--account", "alice"])
        #expect(delete.status == 1)
        #expect(delete.stderrText.contains("read-only"), "\(delete.stderrText)")

        #expect(try Data(contentsOf: URL(fileURLWithPath: keychain)) == before)
        #expect(try sf(["keychain", "get", "--keychain", keychain, "--service", "mail", "--account", "alice"]).stdoutText == "pw-a\n")
    }

    /// Issue 21: opening a sealed item needs no write lock. On a read-only keychain the right
    /// passcode unlocks (nothing can be recorded, so the attempt is not counted) and a wrong one is
    /// refused as wrong, not as "cannot lock the vault state"; the file is unchanged.
    @Test(.requires(.unshare), .requiresSFBinary, .hangBackstop)
    func secureItemsAreReadFromAReadOnlyKeychain() throws {
        let scratch = try Scratch()
        try FileManager.default.createDirectory(atPath: scratch.path("rw"), withIntermediateDirectories: true)
        let keychain = scratch.path("rw/keychain.db")
        let passcode = try scratch.write("passcode", Data("read-only passcode\n".utf8))
        let wrong = try scratch.write("wrong", Data("not the passcode\n".utf8))
        let questions = try scratch.write("questions", Data("First pet?\n".utf8))
        let answers = try scratch.write("answers", Data("Rex\n".utf8))
        var result = try sf([
            "vault", "init", "--keychain", keychain, "--passcode-file", passcode, "--questions-file", questions,
            "--answers-file", answers, "--scrypt-log-n", "10",
        ])
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(
            ["keychain", "set", "--secure", "--keychain", keychain, "--passcode-file", passcode, "--service", "db", "--account", "app"],
            stdin: Data("sealed-pw".utf8))
        #expect(result.status == 0, "\(result.stderrText)")
        let before = try Data(contentsOf: URL(fileURLWithPath: keychain))
        let get = ["keychain", "get", "--secure", "--keychain", "{ro}/keychain.db", "--service", "db", "--account", "app", "--passcode-file"]

        result = try Self.sfOnReadOnlyView(scratch, get + [passcode])
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stdoutText == "sealed-pw\n")
        result = try Self.sfOnReadOnlyView(scratch, get + [wrong])
        #expect(result.status == 1 && result.stdout.isEmpty)
        #expect(result.stderrText.contains("wrong passcode") && !result.stderrText.contains("lock"), "\(result.stderrText)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: keychain)) == before)
    }
}
