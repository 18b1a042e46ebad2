import Foundation
import SFTestSupport
import SecureCore
import Testing

/// `--json` on the commands that list or report: key list, vault status, key fingerprint.
@Suite struct JSONOutputTests {
    func object(_ result: ProcessResult) throws -> Any {
        try #require(result.status == 0, "\(result.stderrText)")
        return try JSONSerialization.jsonObject(with: result.stdout)
    }

    /// Names in a keychain are whatever whoever wrote the file chose: `keychain list --json` (its
    /// own pretty-printed encoding) printed DEL, C1 controls and bidirectional overrides raw.
    @Test func keychainListJSONEscapesWhatActsOnATerminal() throws {
        let scratch = try Scratch()
        let kc = ["--keychain", scratch.path("keychain.db")]
        let service = "mail\u{202E}lmth.exe\u{9B}2J\u{7F}"
        #expect(try sf(["keychain", "set", "--service", service, "--account", "a\u{2028}b"] + kc, stdin: Data("pw".utf8)).status == 0)
        let listed = try sf(["keychain", "list", "--json"] + kc)
        #expect(listed.status == 0, "\(listed.stderrText)")
        #expect(!listed.stdoutText.unicodeScalars.contains { PrintableText.isUnsafe($0) && $0 != "\n" }, "\(listed.stdoutText.debugDescription)")
        #expect(listed.stdoutText.contains("mail\\u202elmth.exe\\u009b2J\\u007f"), "\(listed.stdoutText)")
        // The escapes decode to the names as stored.
        let rows = try #require(try object(listed) as? [[String: Any]])
        #expect(rows.first?["service"] as? String == service && rows.first?["account"] as? String == "a\u{2028}b")
    }

    @Test func keyListVaultStatusAndFingerprint() throws {
        let scratch = try Scratch()
        let kc = ["--keychain", scratch.path("keychain.db")]
        // Before set-up: only set_up.
        let before = try #require(try object(sf(["vault", "status", "--json"] + kc)) as? [String: Any])
        #expect(before.count == 1 && before["set_up"] as? Bool == false)
        #expect(try sf(["key", "list", "--json"] + kc).stdoutText == "[]\n")

        let passcode = try scratch.write("passcode", Data("json passcode\n".utf8))
        let questions = try scratch.write("questions", Data("First pet?\nTown?\n".utf8))
        let answers = try scratch.write("answers", Data("Rex\nOslo\n".utf8))
        #expect(try sf(["vault", "init"] + kc + ["--passcode-file", passcode, "--questions-file", questions,
                                                "--answers-file", answers, "--scrypt-log-n", "10"]).status == 0)
        let status = try #require(try object(sf(["vault", "status", "--json"] + kc)) as? [String: Any])
        #expect(status["set_up"] as? Bool == true && status["security_questions"] as? [String] == ["First pet?", "Town?"])
        #expect(status["failed_attempts"] as? Int == 0 && (status["key_ids"] as? [Int])?.count == 1 && status["current_key_id"] is Int)

        let generated = try sf(["key", "generate", "--type", "ed25519", "--tag", "signer"] + kc + ["--passcode-file", passcode])
        #expect(generated.status == 0, "\(generated.stderrText)")
        #expect(try sf(["key", "generate", "--type", "x25519", "--out", scratch.path("bob.pem"), "--public-out", scratch.path("bob.pub")]).status == 0)
        #expect(try sf(["key", "import", "--tag", "bob", scratch.path("bob.pub")] + kc).status == 0)
        let rows = try #require(try object(sf(["key", "list", "--json"] + kc)) as? [[String: String]])
        let fingerprint = generated.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ").last.map(String.init)
        #expect(rows.count == 2)
        #expect(rows.contains { $0 == ["tag": "signer", "type": "ed25519", "fingerprint": fingerprint ?? "?", "kind": "pair"] }, "\(rows)")
        #expect(rows.contains { $0["tag"] == "bob" && $0["type"] == "x25519" && $0["kind"] == "partner" })

        // key fingerprint: the same values as the line form; no OpenSSH member for X25519.
        let line = try sf(["key", "fingerprint", scratch.path("bob.pub")]).stdoutText.split(separator: " ")
        let bob = try #require(try object(sf(["key", "fingerprint", "--json", scratch.path("bob.pub")])) as? [String: String])
        #expect(bob == ["type": "x25519", "fingerprint": String(line[1]).trimmingCharacters(in: .newlines)])
        #expect(try sf(["key", "generate", "--type", "ed25519", "--out", scratch.path("ed.pem")]).status == 0)
        let ed = try #require(try object(sf(["key", "fingerprint", "--json", scratch.path("ed.pem")])) as? [String: String])
        #expect(ed["type"] == "ed25519" && ed["fingerprint"]?.hasPrefix("sha256-spki:") == true && ed["openssh_fingerprint"]?.hasPrefix("SHA256:") == true)
    }
}
