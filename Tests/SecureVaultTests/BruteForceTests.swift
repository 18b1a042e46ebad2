import Foundation
import SecureCore
import SecureVault
import Testing

/// The seed accepted about 1 in 65,536 wrong passcodes; authenticated wraps accept none.
@Suite struct BruteForceTests {
    @Test func tenThousandWrongPasscodesNeverUnlock() throws {
        let scratch = try VaultScratch()
        _ = try scratch.setUpVault(configuration(throttling: nil))
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration(throttling: nil))
        var generator = SystemRandomNumberGenerator()
        var unlocks = 0, wrong = 0
        for _ in 0..<10_000 {
            let length = Int.random(in: 1...24, using: &generator)
            let guess = SecretBytes((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            guard guess != secret("old passcode") else { continue }
            switch vaultError({ try vault.unlock(passcode: guess) }) {
            case nil: unlocks += 1
            case .wrongPasscode?: wrong += 1
            case let other?: Issue.record("unexpected \(other)")
            }
        }
        #expect(unlocks == 0)
        #expect(wrong >= 9_990)
        #expect(vault.isLocked)
        try vault.unlock(passcode: secret("old passcode"))
    }

    @Test func tenThousandWrongAnswerSetsNeverUnlock() throws {
        let scratch = try VaultScratch()
        _ = try scratch.setUpVault(configuration(throttling: nil))
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration(throttling: nil))
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz ÉéRrEeXx")
        var unlocks = 0
        for _ in 0..<10_000 {
            let answers = (0..<2).map { _ in
                String((0..<Int.random(in: 1...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            }
            guard answers.map(SecurityAnswers.normalize) != testAnswers.map(SecurityAnswers.normalize),
                !answers.contains(where: { SecurityAnswers.normalize($0).isEmpty })
            else { continue }
            switch vaultError({ try vault.unlock(answers: answers) }) {
            case nil: unlocks += 1
            case .wrongAnswers?: break
            case let other?: Issue.record("unexpected \(other)")
            }
        }
        #expect(unlocks == 0)
        #expect(vault.isLocked)
        try vault.unlock(answers: testAnswers)
    }
}
