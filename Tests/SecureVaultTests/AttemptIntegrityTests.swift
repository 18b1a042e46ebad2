import Foundation
import SFTestSupport
import SecureCore
import SecureKeychain
import Testing

@testable import SecureVault

/// What counts as a guess, what a damaged counter or wrap does to the count, and what a process
/// still unlocked on a vault that was set up again may write. The sqlite3 shell edits the file, as
/// whoever can write it could (or another version, or a disk, could leave it).
@Suite("Vault: only guesses are counted; a replaced vault's keys write nothing")
struct AttemptIntegrityTests {
    /// Sets the value of the vault's item of `service` to `value` with the sqlite3 shell.
    static func plant(_ value: Data, service: String, in scratch: VaultScratch) throws {
        let shell = try TestSupport.path(of: .sqlite3)
        let hex = value.map { String(format: "%02x", $0) }.joined()
        let update = try TestSupport.run(
            shell, [scratch.keychainPath, "UPDATE items SET value = X'\(hex)' WHERE service = '\(service)' AND account = 'default'"])
        try #require(update.status == 0, "sqlite3: \(update.stderrText)")
    }

    /// The stored state as JSON, edited by `edit`, planted back.
    static func editState(in scratch: VaultScratch, _ edit: (inout [String: Any]) throws -> Void) throws {
        let shell = try TestSupport.path(of: .sqlite3)
        let hex = try TestSupport.run(
            shell, [scratch.keychainPath, "SELECT hex(value) FROM items WHERE service = '\(Vault.stateService)' AND account = 'default'"]
        ).stdoutText
        var json = try #require(
            try JSONSerialization.jsonObject(with: Data(hexString: hex.trimmingCharacters(in: .whitespacesAndNewlines))) as? [String: Any])
        try edit(&json)
        try plant(
            JSONSerialization.data(withJSONObject: json, options: [.sortedKeys, .withoutEscapingSlashes]), service: Vault.stateService,
            in: scratch)
    }

    /// A vault set up with `configuration` (closed), its failure counter then set to `counter`.
    static func vault(_ configuration: Vault.Configuration, withCounter counter: Data) throws -> VaultScratch {
        let scratch = try VaultScratch()
        let vault = try scratch.setUpVault(configuration)
        // One failure, so that the counter's item exists to be edited.
        #expect(vaultError { try vault.unlock(passcode: secret("a guess")) } == .wrongPasscode)
        try vault.keychain.close()
        try plant(counter, service: Vault.attemptsService, in: scratch)
        return scratch
    }

    static func noThrottling(wipeAfter limit: Int?) -> Vault.Configuration {
        var configuration = configuration(throttling: nil)
        configuration.wipeAfterFailures = limit
        return configuration
    }

    /// A process unlocked on a vault that was erased and set up again (a new vault key) would
    /// have sealed its old keys into the new vault's state, which then opened with no secret.
    @Test(arguments: ["rotate", "passcode", "answers"])
    func aVaultSetUpAgainIsNotWrittenWithTheOldKeys(change: String) throws {
        let scratch = try VaultScratch()
        let configuration = Self.noThrottling(wipeAfter: 1)
        let stale = try scratch.setUpVault(configuration)
        let other = Vault(keychain: try scratch.keychain(), configuration: configuration)
        #expect(vaultError { try other.unlock(passcode: secret("a guess")) } == .wiped)
        try other.setUp(passcode: secret("new passcode"), questions: testQuestions, answers: ["New", "Answers"])
        let before = try other.keychain.passwordData(service: Vault.stateService, account: "default")

        let error = vaultError {
            switch change {
            case "rotate": try stale.rotateKey()
            case "passcode": try stale.updatePasscode(secret("stale passcode"))
            default: try stale.updateSecurityQuestionsAndAnswers(questions: testQuestions, answers: ["Stale", "Answers"])
            }
        }
        #expect(error == .replaced)
        #expect(stale.isLocked, "the stale keys are dropped")
        #expect(vaultError { try stale.rotateKey() } == .locked)

        let reader = Vault(keychain: try scratch.keychain(), configuration: configuration)
        try reader.keychain.synchronizeBlocking()
        #expect(try reader.keychain.passwordData(service: Vault.stateService, account: "default") == before)
        try reader.unlock(passcode: secret("new passcode"))
        reader.purge()
        try reader.unlock(answers: ["New", "Answers"])
    }

    /// A wrap no secret can open (its cost above the ceilings, or cut short) is reported as such
    /// and not counted: before, each try counted, and the third erased a vault whose recovery wrap
    /// was intact.
    @Test(.requires(.sqlite3), arguments: ["cost above the ceiling", "truncated"])
    func aWrapNoSecretOpensIsNotCountedAsAGuess(damage: String) throws {
        let scratch = try VaultScratch()
        let configuration = Self.noThrottling(wipeAfter: 2)
        try scratch.setUpVault(configuration).keychain.close()
        try Self.editState(in: scratch) { json in
            var wrap = try #require(Data(base64Encoded: json["passcodeWrap"] as? String ?? ""))
            if damage == "truncated" {
                wrap = wrap.prefix(30)
            } else {
                wrap.replaceSubrange(6..<9, with: [30, 8, 1])  // scrypt logN 30 (FORMATS.md, SFE1)
            }
            json["passcodeWrap"] = wrap.base64EncodedString()
        }
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration)
        for _ in 0..<3 {
            let error = vaultError { try vault.unlock(passcode: secret("old passcode")) }
            guard case .crypto(let cause)? = error else {
                Issue.record("expected the wrap's error, got \(String(describing: error))")
                return
            }
            if damage == "truncated" {
                #expect(cause == .truncated)
            } else if case .costAboveCeiling = cause {
            } else {
                Issue.record("expected costAboveCeiling, got \(cause)")
            }
            #expect(vault.failedAttempts == 0)
        }
        #expect(vault.hasPasscode)
        try vault.recover(answers: testAnswers, newPasscode: secret("new passcode"))
        #expect(vault.failedAttempts == 0)
    }

    /// The right passcode with a damaged application key: reported, and the attempt not left counted.
    @Test(.requires(.sqlite3)) func aDamagedApplicationKeyIsReportedWithoutCountingTheRightPasscode() throws {
        let scratch = try VaultScratch()
        let configuration = Self.noThrottling(wipeAfter: 2)
        try scratch.setUpVault(configuration).keychain.close()
        try Self.editState(in: scratch) { json in
            var keys = try #require(json["keys"] as? [[String: Any]])
            var sealed = try #require(Data(base64Encoded: keys[0]["sealed"] as? String ?? ""))
            sealed[sealed.count - 1] ^= 0x01
            keys[0]["sealed"] = sealed.base64EncodedString()
            json["keys"] = keys
        }
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration)
        for _ in 0..<3 {
            guard case .corruptState? = vaultError({ try vault.unlock(passcode: secret("old passcode")) }) else {
                Issue.record("expected corruptState")
                return
            }
            #expect(vault.failedAttempts == 0)
        }
        #expect(vault.hasPasscode, "not erased")
    }

    /// An unreadable counter counts as the most restrictive value, but once: it was read afresh
    /// as "the longest wait, from now" at every attempt, so the vault never opened again; and
    /// with a wipe limit, the right passcode erased the vault.
    @Test(.requires(.sqlite3)) func anUnreadableCounterDelaysOnceAndNeverErases() throws {
        let clock = TestClock()
        let throttled = try VaultScratch()
        let configuration = configuration(clock: clock)
        let vault = try throttled.setUpVault(configuration)
        #expect(vaultError { try vault.unlock(passcode: secret("a guess")) } == .wrongPasscode)
        try vault.keychain.close()
        try Self.plant(Data([0x00]), service: Vault.attemptsService, in: throttled)
        let reopened = Vault(keychain: try throttled.keychain(), configuration: configuration)
        guard case .throttled? = vaultError({ try reopened.unlock(passcode: secret("old passcode")) }) else {
            Issue.record("an unreadable counter must delay")
            return
        }
        clock.advance(Vault.Throttling().maximumDelay.seconds + 1)
        try reopened.unlock(passcode: secret("old passcode"))
        #expect(reopened.failedAttempts == 0)

        let limited = Self.noThrottling(wipeAfter: 3)
        let wiping = try Self.vault(limited, withCounter: Data("{\"failures\":".utf8))
        let second = Vault(keychain: try wiping.keychain(), configuration: limited)
        try second.unlock(passcode: secret("old passcode"))
        #expect(second.hasPasscode)
        #expect(second.failedAttempts == 0)
    }

    /// A counter that became unreadable while a wrong guess ran its KDF: the wipe check that
    /// follows read it as the maximum and erased the vault.
    @Test(.requires(.sqlite3)) func anUnreadableCounterAfterAGuessErasesNothing() throws {
        let configuration = Self.noThrottling(wipeAfter: 2)
        let scratch = try Self.vault(configuration, withCounter: Data([0x00]))
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration)
        try vault.wipeIfLimitReached()
        #expect(vault.hasPasscode)
    }

    /// At the wipe limit, an attempt still running (it holds the attempts lock) is the one that
    /// reached it: another attempt then waits instead of erasing the vault under it. With none
    /// running, the attempt that reached the limit ended without settling it (its process died),
    /// and the vault is erased as before.
    @Test(.requires(.sqlite3)) func anAttemptInProgressAtTheLimitIsNotTakenForACrashedOne() throws {
        let configuration = Self.noThrottling(wipeAfter: 2)
        let scratch = try Self.vault(configuration, withCounter: Data("{\"failures\":2,\"lastFailure\":0}".utf8))

        let other = Vault(keychain: try scratch.keychain(), configuration: configuration)
        let running = try AttemptInProgress(lockPath: other.lockPath(Vault.attemptsLockSuffix))
        #expect(vaultError { try other.unlock(passcode: secret("old passcode")) } == .throttled(retryAfter: .seconds(1)))
        #expect(other.hasPasscode)
        running.end()
        #expect(vaultError { try other.unlock(passcode: secret("old passcode")) } == .wiped)
    }

    /// A counter left behind by an erased vault throttled, or erased, the vault set up after it.
    @Test(.requires(.sqlite3)) func aNewVaultStartsWithNoFailures() throws {
        let configuration = Self.noThrottling(wipeAfter: 3)
        let scratch = try Self.vault(configuration, withCounter: Data("{\"failures\":100,\"lastFailure\":0}".utf8))
        let shell = try TestSupport.path(of: .sqlite3)
        let delete = try TestSupport.run(
            shell, [scratch.keychainPath, "DELETE FROM items WHERE service = '\(Vault.stateService)' AND account = 'default'"])
        try #require(delete.status == 0)

        let again = Vault(keychain: try scratch.keychain(), configuration: configuration)
        try again.setUp(passcode: secret("new passcode"), questions: testQuestions, answers: testAnswers)
        again.purge()
        #expect(again.failedAttempts == 0)
        try again.unlock(passcode: secret("new passcode"))
    }

    /// Two openers of one keychain file, one through a symbolic link: the lock is the file's, so
    /// concurrent rotations through either path keep every key.
    @Test func theStateLockIsTheFilesWhateverThePathSpelling() throws {
        let scratch = try VaultScratch()
        let first = try scratch.setUpVault()
        let link = scratch.path("link.db")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: scratch.keychainPath)
        let second = Vault(keychain: try Keychain(path: link), configuration: configuration())
        try second.unlock(passcode: secret("old passcode"))
        #expect(second.lockPath(".vault-lock") == first.lockPath(".vault-lock"))

        let rounds = 10
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for _ in 0..<rounds { _ = try? (worker == 0 ? first : second).rotateKey() }
        }
        let reader = Vault(keychain: try scratch.keychain(), configuration: configuration())
        try reader.unlock(passcode: secret("old passcode"))
        #expect(try reader.loadState().keys.count == 1 + 2 * rounds, "every rotated key is in the state")
    }
}
