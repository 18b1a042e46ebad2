import Foundation
import SecureCore
import SecureKeychain
import SecureVault
import SFTestSupport
import Testing

@Suite struct AnswerTests {
    @Test(arguments: [
        ("Elm Street", "elm street"),
        ("ELM STREET", "elm street"),
        ("  elm \t  street \n", "elm street"),
        ("Caf\u{E9}", "Cafe\u{301}"),  // NFC vs NFD
        ("STRASSE", "straße"),  // full case folding
        ("ﬁsh", "fish"),  // NFKC compatibility ligature
        ("Ｒｅｘ", "rex"),  // full-width forms
    ])
    func equivalentAnswersNormalizeToTheSameBytes(typed: String, stored: String) {
        #expect(Array(SecurityAnswers.normalize(typed).utf8) == Array(SecurityAnswers.normalize(stored).utf8))
    }

    @Test func differentAnswersStayDifferent() throws {
        #expect(SecurityAnswers.normalize("elm street") != SecurityAnswers.normalize("elmstreet"))
        #expect(try SecurityAnswers.passphrase(["ab", "c"]) != SecurityAnswers.passphrase(["a", "bc"]))
        #expect(try SecurityAnswers.passphrase(["a b"]) != SecurityAnswers.passphrase(["a", "b"]))
        #expect(try SecurityAnswers.passphrase(["a"]) != SecurityAnswers.passphrase(["a", "a"]))
    }

    @Test func normalizedAnswersUnlock() throws {
        let scratch = try VaultScratch()
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration())
        try vault.setUp(passcode: secret("p"), questions: ["Town?", "Dish?"], answers: ["Caf\u{E9} Lyon", "Crème  Brûlée"])
        vault.purge()
        try vault.unlock(answers: ["  CAFE\u{301}   lyon", "crème brûlée"])
        #expect(!vault.isLocked)
    }

    @Test func ambiguousSplitDoesNotUnlock() throws {
        let scratch = try VaultScratch()
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration())
        try vault.setUp(passcode: secret("p"), questions: ["One?", "Two?"], answers: ["ab", "c"])
        vault.purge()
        #expect(vaultError { try vault.unlock(answers: ["a", "bc"]) } == .wrongAnswers)
        #expect(vaultError { try vault.unlock(answers: ["abc"]) } == .wrongAnswers)
        try vault.unlock(answers: ["AB", "C"])
    }

    @Test func editedStoredQuestionsBreakRecovery() throws {
        let scratch = try VaultScratch()
        let keychain = try scratch.setUpVault().keychain
        let state = try keychain.passwordData(service: Vault.stateService, account: "default")
        var json = try #require(try JSONSerialization.jsonObject(with: state) as? [String: Any])
        json["questions"] = ["Street you grew up on?", "First pet?"]  // swapped order
        try keychain.setInternalItem(
            try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]), service: Vault.stateService, account: "default")
        let vault = Vault(keychain: keychain, configuration: configuration())
        #expect(vault.securityQuestions == ["Street you grew up on?", "First pet?"])
        #expect(vaultError { try vault.unlock(answers: testAnswers) } == .wrongAnswers)
        #expect(vaultError { try vault.unlock(answers: testAnswers.reversed()) } == .wrongAnswers)
        try vault.unlock(passcode: secret("old passcode"))  // the passcode wrap is unaffected
    }

    @Test func damagedStateIsReportedNotTrusted() throws {
        let scratch = try VaultScratch()
        let keychain = try scratch.setUpVault().keychain
        try keychain.setInternalItem(Data("{}".utf8), service: Vault.stateService, account: "default")
        let vault = Vault(keychain: keychain, configuration: configuration())
        #expect(vaultError { try vault.unlock(passcode: secret("old passcode")) } == .corruptState("not a vault state item"))
    }
}

@Suite struct SecurityQuestionsFileTests {
    @Test func oneNonBlankLinePerEntryWhateverTheLineEndings() throws {
        let expected = ["First pet?", "  City of birth? ", "Teacher"]
        for text in [
            "First pet?\n  City of birth? \nTeacher", "First pet?\r\n  City of birth? \r\nTeacher\r\n",
            "First pet?\r  City of birth? \rTeacher\r", "\n\nFirst pet?\n \t \n  City of birth? \n\nTeacher\n\n",
        ] {
            #expect(SecurityQuestionsFile.lines(in: text) == expected, "\(text.debugDescription)")
        }
        #expect(SecurityQuestionsFile.lines(in: "\n \r\n\t").isEmpty)
    }

    @Test func filesAreReadAndOversizedOnesRefused() throws {
        let dir = try TestSupport.temporaryDirectory("questions-file")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("questions").path
        try Data("Q1\r\nQ2\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try SecurityQuestionsFile.read(path: path) == ["Q1", "Q2"])
        try Data(count: SecurityQuestionsFile.maximumSize + 1).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try SecurityQuestionsFile.read(path: path)
        } throws: { error in
            guard case .invalidParameter = error as? SecureCoreError else { return false }
            return true
        }
    }
}
