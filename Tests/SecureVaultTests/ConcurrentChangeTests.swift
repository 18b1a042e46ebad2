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

/// A thread-safe counter for the test's workers.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
