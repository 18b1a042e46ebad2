import Foundation
import SecureCore
import SecureKeychain
import Testing

@testable import SecureVault

/// Two openers of one vault (as two processes would be: separate keychain connections) changing it
/// at the same time: every change survives, none is overwritten by a write based on a stale state.
@Suite struct ConcurrentChangeTests {
    @Test func concurrentRotationsAndPasscodeChangesLoseNoKey() throws {
        let scratch = try VaultScratch()
        let first = try scratch.setUpVault()
        let sealedBefore = try first.encrypt(Data("before".utf8))
        let second = Vault(keychain: try scratch.keychain(), configuration: configuration())
        try second.unlock(passcode: secret("old passcode"))

        let rounds = 15
        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for round in 0..<rounds {
                do {
                    if worker == 0 {
                        try first.rotateKey()
                    } else {
                        try second.updatePasscode(secret("passcode \(round)"))
                    }
                } catch {
                    failures.add()
                }
            }
        }
        #expect(failures.value == 0)

        let reader = Vault(keychain: try scratch.keychain(), configuration: configuration())
        try reader.unlock(passcode: secret("passcode \(rounds - 1)"))
        let state = try reader.loadState()
        #expect(state.keys.count == 1 + rounds, "every rotated key is still in the state")
        #expect(try reader.decrypt(sealedBefore) == Data("before".utf8))
        let sealedNow = try first.encrypt(Data("after".utf8))
        #expect(try reader.decrypt(sealedNow) == Data("after".utf8))
    }
}

/// Issue 13: the vault's in-process lock is never held across the KDF, so sealing on one thread
/// goes on while another thread unlocks or changes the passcode (seconds at the default cost).
@Suite struct LockScopeTests {
    /// A vault whose passcode wrap costs scrypt logN 16 (64 MiB, a few hundred ms) to open.
    static func slowVault(_ scratch: VaultScratch) throws -> Vault {
        try scratch.setUpVault(Vault.Configuration(kdf: .scrypt(logN: 16, r: 8, p: 1)))
    }

    @Test func sealingDoesNotWaitForAnUnlockInProgress() throws {
        let scratch = try VaultScratch()
        let vault = try Self.slowVault(scratch)
        let events = Events()
        let started = DispatchSemaphore(value: 0)
        let thread = Thread {
            started.signal()
            try? vault.unlock(passcode: secret("old passcode"))
            events.append("unlocked")
        }
        thread.start()
        started.wait()
        // Seal over and over while the unlock runs its KDF. Had the unlock held the lock for its
        // KDF, the first seal would wait for it to finish and none would complete before it.
        var sealedBeforeUnlocked = 0
        while !events.all.contains("unlocked") {
            _ = try vault.encrypt(Data("while unlocking".utf8))
            if !events.all.contains("unlocked") { sealedBeforeUnlocked += 1 }
            usleep(1_000)
        }
        // One is the proof; more would ask the scheduler of a loaded machine for time slices.
        #expect(sealedBeforeUnlocked >= 1, "no seal completed during the unlock")
    }

    @Test func aRotationDuringAnUnlockKeepsItsNewKey() throws {
        let scratch = try VaultScratch()
        let vault = try Self.slowVault(scratch)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            try? vault.unlock(passcode: secret("old passcode"))
            done.signal()
        }
        thread.start()
        try vault.rotateKey()
        let sealedUnderNewKey = try vault.encrypt(Data("new key".utf8))
        done.wait()
        // The unlock finished after (or before) the rotation; either way the new key is known.
        #expect(try vault.decrypt(sealedUnderNewKey) == Data("new key".utf8))
        #expect(try vault.rotateKey().keyId == 3)
    }
}

/// Events in the order they happened.
final class Events: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [String] = []
    func append(_ event: String) { lock.withLock { events.append(event) } }
    var all: [String] { lock.withLock { events } }
}

/// A thread-safe counter for the test's workers.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
