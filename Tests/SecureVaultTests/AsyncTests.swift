import Foundation
import SFTestSupport
import SecureCore
import SecureKeychain
import SecureVault
import Testing

/// `Vault.async`: the waiting calls as async functions that keep Swift's cooperative threads free.
struct AsyncTests {
    @Test func asyncCallsBehaveAsTheSynchronousOnes() async throws {
        let scratch = try VaultScratch()
        let vault = Vault(keychain: try scratch.keychain(), configuration: configuration())
        try await vault.async.setUp(passcode: secret("old passcode"), questions: testQuestions, answers: testAnswers)
        let sealed = try vault.encrypt(Data("payload".utf8))
        vault.purge()

        do {
            try await vault.async.unlock(passcode: secret("wrong"))
            Issue.record("a wrong passcode unlocked the vault")
        } catch {
            #expect(error == .wrongPasscode)
        }
        #expect(vault.isLocked && vault.failedAttempts == 1)
        try await vault.async.unlock(passcode: secret("old passcode"))
        #expect(!vault.isLocked && vault.failedAttempts == 0)

        try await vault.async.updatePasscode(secret("new passcode"))
        let rotation = try await vault.async.rotateKey()
        #expect(rotation.keyId == 2)
        vault.purge()
        try await vault.async.recover(answers: testAnswers, newPasscode: secret("third passcode"))
        #expect(try vault.decrypt(sealed) == Data("payload".utf8))
        vault.purge()
        try await vault.async.unlock(passcode: secret("third passcode"))
        try await vault.async.updateSecurityQuestionsAndAnswers(questions: ["Q?"], answers: ["A"])
        vault.purge()
        try await vault.async.unlock(answers: ["A"])
        #expect(!vault.isLocked)
    }

    /// The tasks here run on an executor of exactly one thread (not the shared cooperative pool,
    /// which other tests keep busy). The test holds the vault's state-file lock, so an unlock
    /// awaited there waits for it; the executor runs the unlock's task first (a serial queue), then
    /// another task, which still runs while the unlock waits, and only then lets the lock go. Had
    /// the unlock blocked the thread (the synchronous call inside a task), the other task could
    /// only run after the fallback let the lock go, and the order would be reversed.
    @Test func awaitingAnUnlockLeavesTheThreadFree() async throws {
        let scratch = try VaultScratch()
        let keychain = try scratch.keychain()
        let vault = Vault(keychain: keychain, configuration: Vault.Configuration(kdf: .scrypt(logN: 10, r: 8, p: 1)))
        try vault.setUp(passcode: secret("passcode"), questions: testQuestions, answers: testAnswers)
        vault.purge()

        let lock = open(keychain.path + ".vault-lock", O_RDWR | O_CREAT, 0o600)
        try #require(lock >= 0 && flock(lock, LOCK_EX) == 0)
        let held = Locked(true)
        @Sendable func release() {
            held.withLock { (isHeld: inout Bool) in
                if isHeld { close(lock) }  // closing releases the lock
                isHeld = false
            }
        }
        // The fallback: a blocked executor thread would otherwise wait for the lock forever.
        DispatchQueue.global().asyncAfter(deadline: .now() + 240) { release() }

        let events = EventLog()
        let executor = QueueExecutor(width: 1, label: "AsyncTests.single-thread")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask(executorPreference: executor) {
                try await vault.async.unlock(passcode: secret("passcode"))
                events.append("unlock")
            }
            group.addTask(executorPreference: executor) {
                events.append("other task")
                release()
            }
            try await group.waitForAll()
        }
        #expect(events.entries == ["other task", "unlock"])
        #expect(!vault.isLocked)
    }
}
