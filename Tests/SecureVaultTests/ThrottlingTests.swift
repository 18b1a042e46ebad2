import Foundation
import SecureCore
import SecureVault
import Testing

@Suite struct ThrottlingTests {
    @Test func delayAfterFifthFailureDoublesPersistsAcrossReopenAndResetsOnSuccess() throws {
        let scratch = try VaultScratch()
        let clock = TestClock()
        let throttling = Vault.Throttling(freeAttempts: 5, baseDelay: .seconds(30), maximumDelay: .seconds(3600))
        _ = try scratch.setUpVault(configuration(throttling: throttling, clock: clock))
        var vault = Vault(keychain: try scratch.keychain(), configuration: configuration(throttling: throttling, clock: clock))
        for _ in 0..<5 { #expect(vaultError { try vault.unlock(passcode: secret("wrong")) } == .wrongPasscode) }
        #expect(vault.failedAttempts == 5)
        // The sixth attempt waits 30 s, even with the right passcode, and the KDF is not run.
        #expect(vaultError { try vault.unlock(passcode: secret("old passcode")) } == .throttled(retryAfter: .seconds(30)))
        #expect(vault.isLocked && vault.failedAttempts == 5)

        // A new process (a reopened keychain) sees the same counter.
        vault = Vault(keychain: try scratch.keychain(), configuration: configuration(throttling: throttling, clock: clock))
        clock.advance(10)
        #expect(vaultError { try vault.unlock(answers: testAnswers) } == .throttled(retryAfter: .seconds(20)))
        clock.advance(20)
        #expect(vaultError { try vault.unlock(passcode: secret("wrong")) } == .wrongPasscode)
        #expect(vaultError { try vault.unlock(passcode: secret("wrong")) } == .throttled(retryAfter: .seconds(60)))
        clock.advance(60)
        #expect(vaultError { try vault.unlock(answers: ["x", "y"]) } == .wrongAnswers)
        #expect(vaultError { try vault.unlock(passcode: secret("old passcode")) } == .throttled(retryAfter: .seconds(120)))
        clock.advance(120)
        try vault.unlock(passcode: secret("old passcode"))
        #expect(vault.failedAttempts == 0)

        // After success the free attempts are back.
        vault.purge()
        for _ in 0..<5 { #expect(vaultError { try vault.unlock(passcode: secret("wrong")) } == .wrongPasscode) }
        #expect(vaultError { try vault.unlock(passcode: secret("wrong")) } == .throttled(retryAfter: .seconds(30)))
    }

    /// Issue 12 item 1: parallel guessing (separate keychain connections, as separate processes
    /// have) cannot bypass the counter; each attempt is counted before its KDF work.
    @Test func twentyConcurrentWrongAttemptsAreAllCountedAndEngageTheThrottle() throws {
        let scratch = try VaultScratch()
        let clock = TestClock()
        let throttling = Vault.Throttling(freeAttempts: 20, baseDelay: .seconds(60), maximumDelay: .seconds(3600))
        var slower = configuration(throttling: throttling, clock: clock)
        slower.kdf = .scrypt(logN: 10, r: 8, p: 1)
        _ = try scratch.setUpVault(slower)
        let vaults = try (0..<20).map { _ in Vault(keychain: try scratch.keychain(), configuration: slower) }
        let outcomes = Outcomes()
        DispatchQueue.concurrentPerform(iterations: vaults.count) { index in
            outcomes.add(vaultError { try vaults[index].unlock(passcode: secret("wrong \(index)")) })
        }
        #expect(outcomes.all.count == 20)
        #expect(outcomes.all.allSatisfy { $0 == .wrongPasscode })
        let fresh = Vault(keychain: try scratch.keychain(), configuration: slower)
        #expect(fresh.failedAttempts == 20)
        // The throttle is engaged, even for the right passcode.
        #expect(vaultError { try fresh.unlock(passcode: secret("old passcode")) } == .throttled(retryAfter: .seconds(60)))
        #expect(fresh.failedAttempts == 20)
        clock.advance(60)
        try fresh.unlock(passcode: secret("old passcode"))
        #expect(fresh.failedAttempts == 0)
    }

    @Test func delaySchedule() {
        let throttling = Vault.Throttling(freeAttempts: 5, baseDelay: .seconds(1), maximumDelay: .seconds(100))
        #expect((0...4).allSatisfy { throttling.delay(afterFailures: $0) == .zero })
        #expect(throttling.delay(afterFailures: 5) == .seconds(1))
        #expect(throttling.delay(afterFailures: 6) == .seconds(2))
        #expect(throttling.delay(afterFailures: 9) == .seconds(16))
        #expect(throttling.delay(afterFailures: 50) == .seconds(100))
        #expect(throttling.delay(afterFailures: Int.max) == .seconds(100))
    }
}

/// Collects results from concurrent workers.
final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var values = [VaultError?]()
    func add(_ value: VaultError?) { lock.withLock { values.append(value) } }
    var all: [VaultError?] { lock.withLock { values } }
}
