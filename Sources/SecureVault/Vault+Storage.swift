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
    /// The lock file is named after the keychain file itself (`lockPath`), so two processes that
    /// reach one file through different paths (a symbolic link) still take the same lock.
    func withStateFileLock<R>(_ body: () throws(VaultError) -> R) throws(VaultError) -> R {
        if keychain.isReadOnly { return try body() }
        let lockPath = lockPath(".vault-lock")
        let fd = openLockFile(lockPath)
        guard fd >= 0 else { throw .stateLock(path: lockPath, reason: String(cString: strerror(errno))) }
        defer { close(fd) }  // closing releases the lock
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw .stateLock(path: lockPath, reason: String(cString: strerror(errno))) }
        }
        return try body()
    }

    /// `<keychain>` + `suffix`, where `<keychain>` is the keychain's path with its symbolic links
    /// resolved (the file's, or its directory's while the file does not exist yet).
    func lockPath(_ suffix: String) -> String {
        FilePaths.resolved(keychain.path) + suffix
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

    /// The failure counter; an unreadable one (`storedAttempts()` nil) counts as the most
    /// restrictive value.
    func loadAttempts() -> VaultAttempts {
        storedAttempts() ?? VaultAttempts(failures: Int(Int32.max), lastFailure: configuration.now().timeIntervalSince1970)
    }

    /// The stored failure counter: `.none` when there is none, nil when it is there and cannot be
    /// read (damaged, of another version, or not stored as a counter is).
    func storedAttempts() -> VaultAttempts? {
        do {
            return VaultAttempts.decode(try keychain.passwordData(service: Self.attemptsService, account: name))
        } catch .itemNotFound {
            return VaultAttempts.none
        } catch {
            return nil
        }
    }

    /// Replaces an unreadable counter (the caller holds the state file lock) by a readable one at
    /// the most restrictive value short of erasing the vault: the longest wait, counted from now
    /// once, or one failure below the wipe limit. (Read afresh each time, as `loadAttempts` does,
    /// it would make every attempt wait the longest delay from that moment, for ever.)
    func repairDamagedAttempts() throws(VaultError) {
        guard configuration.countsFailures, !keychain.isReadOnly, storedAttempts() == nil else { return }
        let failures = configuration.wipeAfterFailures.map { max($0 - 1, 0) } ?? Int(Int32.max)
        try storeAttempts(VaultAttempts(failures: min(failures, Int(Int32.max)), lastFailure: configuration.now().timeIntervalSince1970))
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
    /// file lock), and marks it in progress until its outcome is settled (nil when failures are
    /// not counted). When the count already reached the wipe limit: if an attempt is still in
    /// progress, it is the one that reached it, and settles it itself (this one is `throttled`
    /// for a second); if none is, a previous attempt reached it and its process ended before
    /// wiping, so this erases the vault and throws `wiped`. On a read-only keychain nothing is
    /// counted (see `attempt`).
    func countAttempt() throws(VaultError) -> AttemptInProgress? {
        guard configuration.countsFailures, !keychain.isReadOnly else { return nil }
        var attempts = loadAttempts()
        if let limit = configuration.wipeAfterFailures, attempts.failures >= limit {
            if AttemptInProgress.anyRunning(lockPath: lockPath(Self.attemptsLockSuffix)) {
                throw .throttled(retryAfter: .seconds(1))
            }
            try wipe()
        }
        // Saturating, and safe against a tampered stored count.
        attempts.failures = attempts.failures < Int(Int32.max) ? max(attempts.failures, 0) + 1 : Int(Int32.max)
        attempts.lastFailure = configuration.now().timeIntervalSince1970
        try storeAttempts(attempts)
        return try AttemptInProgress(lockPath: lockPath(Self.attemptsLockSuffix))
    }

    /// The lock file every attempt holds shared from its count until its outcome.
    static let attemptsLockSuffix = ".vault-attempts"

    /// After a failed attempt: erases the vault when the stored count (read again now: a success
    /// meanwhile reset it) reached the configured wipe limit; never for a count that cannot be
    /// read (the next attempt repairs it).
    func wipeIfLimitReached() throws(VaultError) {
        guard let limit = configuration.wipeAfterFailures, let attempts = storedAttempts(), attempts.failures >= limit else { return }
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

/// An attempt counted and not yet settled: a shared lock on the attempts lock file, which the
/// system releases if the process dies, so an attempt in progress is told from one whose process
/// ended without settling it.
struct AttemptInProgress {
    private let fd: Int32

    init(lockPath: String) throws(VaultError) {
        fd = openLockFile(lockPath)
        guard fd >= 0 else { throw .stateLock(path: lockPath, reason: String(cString: strerror(errno))) }
        while flock(fd, LOCK_SH) != 0 {
            guard errno == EINTR else {
                let reason = String(cString: strerror(errno))
                close(fd)
                throw .stateLock(path: lockPath, reason: reason)
            }
        }
    }

    /// The attempt is settled.
    func end() { close(fd) }

    /// Whether any attempt (in any process) holds the lock at `lockPath`.
    static func anyRunning(lockPath: String) -> Bool {
        let fd = openLockFile(lockPath)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EINTR else { return errno == EWOULDBLOCK }
        }
        return false
    }
}

/// Opens (creating) a lock file; a free function because `Vault.open` shadows the system call.
private func openLockFile(_ path: String) -> Int32 {
    open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
}
