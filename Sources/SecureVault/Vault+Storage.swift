import Foundation
import SecureCore
import SecureKeychain

/// Reading and writing the state and attempt items, and the throttling rules.
extension Vault {
    /// Runs a read-modify-write of the state item holding an exclusive advisory lock on
    /// `<keychain>.vault-lock`, so two processes (or two `Vault` objects) changing one vault at once
    /// cannot both start from the same state and have the later write drop the other's change
    /// (for example a key added by a concurrent rotation).
    /// A read-only keychain cannot change, so there is nothing to serialize: no lock file is made.
    func withStateFileLock<R>(_ body: () throws(VaultError) -> R) throws(VaultError) -> R {
        if keychain.isReadOnly { return try body() }
        let lockPath = keychain.path + ".vault-lock"
        let fd = openLockFile(lockPath)
        guard fd >= 0 else { throw .stateLock(path: lockPath, reason: String(cString: strerror(errno))) }
        defer { close(fd) }  // closing releases the lock
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw .stateLock(path: lockPath, reason: String(cString: strerror(errno))) }
        }
        return try body()
    }

    func sync() throws(VaultError) {
        do { try keychain.synchronizeBlocking() } catch { throw .keychain(error) }
    }

    func storedStateData() throws(VaultError) -> Data? {
        do {
            return try keychain.passwordData(service: Self.stateService, account: name)
        } catch .itemNotFound {
            return nil
        } catch {
            throw .keychain(error)
        }
    }

    func loadState() throws(VaultError) -> VaultState {
        guard let data = try storedStateData() else { throw .notSetUp }
        return try VaultState.decode(data)
    }

    /// Writes `state` as one item and returns once it is durable.
    func store(_ state: VaultState) throws(VaultError) {
        do {
            try keychain.setInternalItem(state.canonicalJSON(), service: Self.stateService, account: name)
            try keychain.synchronizeBlocking()
        } catch {
            throw .keychain(error)
        }
    }

    func loadAttempts() -> VaultAttempts {
        guard let data = try? keychain.passwordData(service: Self.attemptsService, account: name) else { return .none }
        return VaultAttempts.decode(data)
    }

    private func storeAttempts(_ attempts: VaultAttempts) throws(VaultError) {
        do {
            try keychain.setInternalItem(attempts.canonicalJSON(), service: Self.attemptsService, account: name)
            try keychain.synchronizeBlocking()
        } catch {
            throw .keychain(error)
        }
    }

    /// Throws `throttled` while the delay earned by the recorded failures has not yet passed.
    func checkThrottle() throws(VaultError) {
        guard let throttling = configuration.throttling else { return }
        let attempts = loadAttempts()
        let delay = throttling.delay(afterFailures: attempts.failures)
        guard delay > .zero else { return }
        let remaining = attempts.lastFailure + delay.seconds - configuration.now().timeIntervalSince1970
        // A stored time in the future (clock change or tampering) never waits longer than the maximum.
        let wait = min(remaining, throttling.maximumDelay.seconds, 1e12)
        if wait > 0 { throw .throttled(retryAfter: .milliseconds(Int64((wait * 1000).rounded(.up)))) }
    }

    /// Counts an attempt as a failure, durably, before its KDF work (the caller holds the state
    /// file lock); returns the new count (0 when failures are not counted). When a previous
    /// attempt already reached the wipe limit (its process ended before wiping), erases the vault
    /// and throws `wiped`. On a read-only keychain nothing is counted (see `attempt`).
    func countAttempt() throws(VaultError) -> Int {
        guard configuration.countsFailures, !keychain.isReadOnly else { return 0 }
        var attempts = loadAttempts()
        if let limit = configuration.wipeAfterFailures, attempts.failures >= limit { try wipe() }
        // Saturating, and safe against a tampered stored count.
        attempts.failures = attempts.failures < Int(Int32.max) ? max(attempts.failures, 0) + 1 : Int(Int32.max)
        attempts.lastFailure = configuration.now().timeIntervalSince1970
        try storeAttempts(attempts)
        return attempts.failures
    }

    /// After a failed attempt counted as number `failures`: erases the vault when that reached the
    /// configured wipe limit.
    func wipeIfLimitReached(failures: Int) throws(VaultError) {
        guard let limit = configuration.wipeAfterFailures, failures >= limit else { return }
        try wipe()
    }

    private func wipe() throws(VaultError) -> Never {
        do {
            try keychain.deleteInternalItem(service: Self.stateService, account: name)
            try? keychain.deleteInternalItem(service: Self.attemptsService, account: name)
            try keychain.synchronizeBlocking()
        } catch .itemNotFound {
            // Already erased by another attempt.
        } catch {
            throw .keychain(error)
        }
        throw .wiped
    }

    func resetFailures() throws(VaultError) {
        guard configuration.countsFailures, !keychain.isReadOnly, loadAttempts() != .none else { return }
        try storeAttempts(.none)
    }
}

/// Opens (creating) a lock file; a free function because `Vault.open` shadows the system call.
private func openLockFile(_ path: String) -> Int32 {
    open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
}
