import Foundation
import SFTestSupport
import SecureCore
import SecureKeychain
import SecureVault
import Testing

@Suite struct VaultLifecycleTests {
    @Test func setUpThroughTemporaryStorageThenFinalize() throws {
        let scratch = try VaultScratch()
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration())
        #expect(!vault.hasPasscode && !vault.hasSecurityQuestionsAndAnswers && vault.securityQuestions.isEmpty)
        #expect(vaultError { try vault.finalize() } == .incompleteSetUp("no temporary passcode"))
        try vault.setTemporaryPasscode(secret("pass"))
        #expect(vaultError { try vault.finalize() } == .incompleteSetUp("no temporary security questions and answers"))
        try vault.setTemporarySecurityQuestions(testQuestions, answers: testAnswers)
        try vault.finalize()
        #expect(vault.hasPasscode && vault.hasSecurityQuestionsAndAnswers && !vault.isLocked)
        #expect(vault.securityQuestions == testQuestions)
        #expect(vaultError { try vault.setUp(passcode: secret("x"), questions: ["q"], answers: ["a"]) } == .alreadySetUp)
    }

    @Test func rejectsInvalidSecrets() throws {
        let vault = Vault(keychain: try VaultScratch().keychain(), configuration: configuration())
        #expect(vaultError { try vault.setTemporaryPasscode(SecretBytes(Data())) } == .invalidSecret("the passcode is empty"))
        #expect(vaultError { try vault.setTemporarySecurityQuestions(["q1", "q2"], answers: ["a"]) } == .invalidSecret("2 questions but 1 answers"))
        #expect(vaultError { try vault.setTemporarySecurityQuestions([], answers: []) } == .invalidSecret("at least one security question is needed"))
        #expect(vaultError { try vault.setTemporarySecurityQuestions(["q"], answers: ["  "]) } == .invalidSecret("an answer is blank"))
    }

    @Test func unlockPurgeAndReadWhileLocked() throws {
        let scratch = try VaultScratch()
        let sealed = try scratch.setUpVault().encrypt(Data("hello".utf8))
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration())
        #expect(vault.isLocked && vault.hasPasscode && vault.securityQuestions == testQuestions)
        #expect(vaultError { _ = try vault.decrypt(sealed) } == .locked)
        #expect(vaultError { try vault.updatePasscode(secret("new")) } == .locked)
        #expect(vaultError { try vault.updateSecurityQuestionsAndAnswers(questions: ["q"], answers: ["a"]) } == .locked)
        #expect(vaultError { try vault.rotateKey() } == .locked)
        try vault.unlock(passcode: secret("old passcode"))
        #expect(try vault.decrypt(sealed) == Data("hello".utf8))
        vault.purge()
        #expect(vault.isLocked)
        #expect(vaultError { _ = try vault.encrypt(Data()) } == .locked)
        #expect(throws: SecureCoreError.locked) { _ = try vault.seal(Data(), context: Data()) }
    }

    @Test func failedAttemptLeavesUnlockedVaultUnlockedAndStateUnchanged() throws {
        let scratch = try VaultScratch()
        let vault = try scratch.setUpVault()
        let keychain = vault.keychain
        let before = try keychain.passwordData(service: Vault.stateService, account: "default")
        #expect(vaultError { try vault.unlock(passcode: secret("wrong")) } == .wrongPasscode)
        #expect(vaultError { try vault.unlock(answers: ["no", "no"]) } == .wrongAnswers)
        #expect(!vault.isLocked)
        #expect(try vault.decrypt(try vault.encrypt(Data("still".utf8))) == Data("still".utf8))
        #expect(try keychain.passwordData(service: Vault.stateService, account: "default") == before)
    }

    @Test func changePasscodeAndQuestions() throws {
        let scratch = try VaultScratch()
        let vault = try scratch.setUpVault()
        let sealed = try vault.encrypt(Data("data".utf8))
        try vault.updatePasscode(secret("new passcode"))
        try vault.updateSecurityQuestionsAndAnswers(questions: ["Favourite colour?"], answers: ["Blue"])
        let reopened = Vault(keychain: try scratch.keychain(), configuration: configuration())
        #expect(reopened.securityQuestions == ["Favourite colour?"])
        #expect(vaultError { try reopened.unlock(passcode: secret("old passcode")) } == .wrongPasscode)
        #expect(vaultError { try reopened.unlock(answers: testAnswers) } == .wrongAnswers)
        try reopened.unlock(passcode: secret("new passcode"))
        #expect(try reopened.decrypt(sealed) == Data("data".utf8))
        reopened.purge()
        try reopened.unlock(answers: ["blue"])
        #expect(try reopened.decrypt(sealed) == Data("data".utf8))
    }

    @Test func recoveryWithAnswersSetsANewPasscode() throws {
        let scratch = try VaultScratch()
        let sealed = try scratch.setUpVault().encrypt(Data("data".utf8))
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration())
        try vault.recover(answers: ["  REX ", "elm   street"], newPasscode: secret("reset passcode"))
        vault.purge()
        #expect(vaultError { try vault.unlock(passcode: secret("old passcode")) } == .wrongPasscode)
        try vault.unlock(passcode: secret("reset passcode"))
        #expect(try vault.decrypt(sealed) == Data("data".utf8))
    }

    @Test func wrapsUseScryptWithTheirOwnSaltsAndNoSecretIsStoredInClear() throws {
        let scratch = try VaultScratch()
        let vault = try scratch.setUpVault()
        let state = try vault.keychain.passwordData(service: Vault.stateService, account: "default")
        let json = try #require(try JSONSerialization.jsonObject(with: state) as? [String: Any])
        let passcodeWrap = try #require(Data(base64Encoded: json["passcodeWrap"] as? String ?? ""))
        let recoveryWrap = try #require(Data(base64Encoded: json["recoveryWrap"] as? String ?? ""))
        let a = try Envelope.header(of: passcodeWrap), b = try Envelope.header(of: recoveryWrap)
        #expect(a.kdf == testKDF && b.kdf == testKDF)
        #expect(a.salt.count == 16 && a.salt != b.salt)
        // Base64 text spells any three letters by chance (a state's holds "rex" about once in 400
        // vaults), so the needles are looked for in what the state holds: its clear text (the
        // questions, numbers) and the bytes its base64 members encode; it holds nothing else.
        #expect(Set(json.keys) == ["version", "vaultId", "passcodeWrap", "questions", "recoveryWrap", "currentKeyId", "keys"])
        let questions = try #require(json["questions"] as? [String])
        let keys = try #require(json["keys"] as? [[String: Any]])
        let encoded = [json["vaultId"], json["passcodeWrap"], json["recoveryWrap"]] + keys.map { $0["sealed"] }
        let binary = try encoded.map { try #require(Data(base64Encoded: $0 as? String ?? "")) }
        for needle in ["old passcode", "Rex", "rex", "elm street"] {
            for haystack in [Data(questions.joined(separator: "\n").utf8)] + binary {
                #expect(haystack.range(of: Data(needle.utf8)) == nil, "\(needle)")
            }
        }
    }

    @Test func defaultCostIsScryptLogN17() throws {
        let scratch = try VaultScratch()
        var configuration = Vault.Configuration()
        configuration.throttling = nil
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration)
        try vault.setUp(passcode: secret("p"), questions: ["q"], answers: ["a"])
        let state = try vault.keychain.passwordData(service: Vault.stateService, account: "default")
        let json = try #require(try JSONSerialization.jsonObject(with: state) as? [String: Any])
        let wrap = try #require(Data(base64Encoded: json["passcodeWrap"] as? String ?? ""))
        #expect(try Envelope.header(of: wrap).kdf == .scrypt(logN: 17, r: 8, p: 1))
        vault.purge()
        try vault.unlock(passcode: secret("p"))
        #expect(!vault.isLocked)
    }

    // Live peer: the sqlite3 shell edits the state in the file, as whoever can write it could.
    @Test(.requires(.sqlite3)) func aStoredWrapCostBelowTheFloorOrAboveTheCeilingIsNotCopied() throws {
        let shell = try TestSupport.path(of: .sqlite3)
        // Below the floor, r below 8, above the ceiling: the default; at the floor or above: kept.
        for (logN, r, p, kept): (UInt8, UInt8, UInt8, Bool) in [(1, 1, 1, false), (12, 1, 1, false), (30, 8, 1, false), (10, 8, 1, true), (12, 8, 1, true)] {
            let scratch = try VaultScratch()
            try scratch.setUpVault().keychain.close()
            // The passcode wrap's header says scrypt logN, r, p (FORMATS.md, SFE1: bytes 6, 7, 8).
            let row = "WHERE service = '\(Vault.stateService)' AND account = 'default'"
            let hex = try TestSupport.run(shell, [scratch.keychainPath, "SELECT hex(value) FROM items \(row)"]).stdoutText
            let stateData = Data(hexString: hex.trimmingCharacters(in: .whitespacesAndNewlines))
            var json = try #require(try JSONSerialization.jsonObject(with: stateData) as? [String: Any])
            var wrap = try #require(Data(base64Encoded: json["passcodeWrap"] as? String ?? ""))
            #expect(wrap[5] == 0x01)
            wrap.replaceSubrange(6..<9, with: [logN, r, p])
            json["passcodeWrap"] = wrap.base64EncodedString()
            let tampered = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys, .withoutEscapingSlashes])
            let update = try TestSupport.run(shell, [scratch.keychainPath, "UPDATE items SET value = X'\(tampered.map { String(format: "%02x", $0) }.joined())' \(row)"])
            try #require(update.status == 0, "sqlite3: \(update.stderrText)")

            // A vault that keeps the stored cost (no configured KDF) unlocks by its answers and sets
            // a new passcode: the new wrap costs the default, not the planted cost.
            var keepingCost = Vault.Configuration()
            keepingCost.throttling = nil
            let vault = Vault(keychain: try scratch.keychain(), configuration: keepingCost)
            try vault.recover(answers: testAnswers, newPasscode: secret("new passcode"))
            let state = try vault.keychain.passwordData(service: Vault.stateService, account: "default")
            let stored = try #require(try JSONSerialization.jsonObject(with: state) as? [String: Any])
            let newWrap = try #require(Data(base64Encoded: stored["passcodeWrap"] as? String ?? ""))
            let expected: PasswordKDF = kept ? .scrypt(logN: logN, r: UInt32(r), p: UInt32(p)) : .default
            #expect(try Envelope.header(of: newWrap).kdf == expected, "planted logN \(logN), r \(r)")
            vault.purge()
            try vault.unlock(passcode: secret("new passcode"))
        }
    }

    /// A key id at the top of the range, planted in the state file while a process is unlocked,
    /// makes rotation a typed error, not an overflow trap, and the state stays as it was.
    @Test(.requires(.sqlite3)) func aPlantedLastKeyIdStopsRotationWithAnError() throws {
        let shell = try TestSupport.path(of: .sqlite3)
        let scratch = try VaultScratch()
        let vault = try scratch.setUpVault()
        try vault.keychain.synchronizeBlocking()
        let row = "WHERE service = '\(Vault.stateService)' AND account = 'default'"
        let hex = try TestSupport.run(shell, [scratch.keychainPath, "SELECT hex(value) FROM items \(row)"]).stdoutText
        var json = try #require(try JSONSerialization.jsonObject(with: Data(hexString: hex.trimmingCharacters(in: .whitespacesAndNewlines))) as? [String: Any])
        var keys = try #require(json["keys"] as? [[String: Any]])
        var planted = try #require(keys.first)
        planted["id"] = UInt32.max
        keys.append(planted)
        json["keys"] = keys
        let tampered = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys, .withoutEscapingSlashes])
        let update = try TestSupport.run(shell, [scratch.keychainPath, "UPDATE items SET value = X'\(tampered.map { String(format: "%02x", $0) }.joined())' \(row)"])
        try #require(update.status == 0, "sqlite3: \(update.stderrText)")

        #expect(vaultError { try vault.rotateKey() } == .corruptState("application key id 4294967295 is the last one; no new key id is left"))
        #expect(try vault.keychain.passwordData(service: Vault.stateService, account: "default") == tampered)
    }

    @Test func keychainSecureItemsSealThroughTheVault() throws {
        let scratch = try VaultScratch()
        let vault = try scratch.setUpVault()
        let keychain = vault.keychain
        try keychain.setSecurePassword("s3cret", service: "mail", account: "me", sealer: vault)
        #expect(try keychain.securePassword(service: "mail", account: "me", sealer: vault) == "s3cret")
        vault.purge()
        #expect(throws: KeychainError.locked) { _ = try keychain.securePassword(service: "mail", account: "me", sealer: vault) }
        #expect(throws: KeychainError.locked) { try keychain.setSecurePassword("x", service: "mail", account: "me", sealer: vault) }
    }

    @Test func wipeAfterConfiguredFailures() throws {
        let scratch = try VaultScratch()
        var configuration = configuration(throttling: nil)
        configuration.wipeAfterFailures = 3
        _ = try scratch.setUpVault(configuration)
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration)
        #expect(vaultError { try vault.unlock(passcode: secret("a")) } == .wrongPasscode)
        #expect(vaultError { try vault.unlock(passcode: secret("b")) } == .wrongPasscode)
        #expect(vaultError { try vault.unlock(passcode: secret("c")) } == .wiped)
        #expect(!vault.hasPasscode)
        #expect(vaultError { try vault.unlock(passcode: secret("old passcode")) } == .notSetUp)
    }
}
