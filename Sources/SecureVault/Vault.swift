import Foundation
import Synchronization
import SecureCore
import SecureKeychain

/// The crypto manager: one random vault key kept on disk only wrapped, once under the passcode and
/// once under the answers to security questions (scrypt envelopes with their own salts, bound to
/// the vault id and, for recovery, the questions). The vault key in turn seals the application
/// keys (one current, older ones kept after `rotateKey()`), which encrypt data and the keychain's
/// secure items.
///
/// Unwrapping is authenticated: a wrong passcode or wrong answers never unlock, and a failed
/// attempt changes nothing but the on-disk failure counter. The state is one keychain item, so a
/// crash during any change leaves either the old or the new state. All methods are thread-safe.
public final class Vault: ItemSealer, Sendable {
    /// The keychain service of the state items (account: the vault name).
    public static let stateService = "SecureFoundation.vault"
    /// The keychain service of the failed-attempt counters (account: the vault name).
    public static let attemptsService = "SecureFoundation.vault.attempts"

    /// The keychain holding the vault's state.
    public let keychain: Keychain
    /// The vault's name in the keychain (several vaults can share one keychain).
    public let name: String
    /// The configuration given at creation.
    public let configuration: Configuration

    struct Keys {
        /// The vault these keys open (a vault set up again under the same name has another).
        let vaultId: Data
        let vaultKey: SecretBytes
        var applicationKeys: [UInt32: SecretBytes]
        var currentKeyId: UInt32
    }

    private struct Temporary {
        var passcode: SecretBytes?
        var questions: [String]?
        var answers: [String]?
    }

    /// What the vault holds in memory only: the keys (nil while locked) and the set-up values.
    private struct InMemory {
        var unlocked: Keys?
        var temporary = Temporary()
    }

    private let inMemory = Mutex(InMemory())

    /// A vault named `name` in `keychain` (set up or not). Nothing is read or written yet.
    public init(keychain: Keychain, name: String = "default", configuration: Configuration = Configuration()) {
        self.keychain = keychain
        self.name = name
        self.configuration = configuration
    }

    // MARK: Readable while locked

    /// True when the vault is set up and its state is valid (false when not set up or corrupt;
    /// `setUpStatus` tells the two apart).
    public var hasPasscode: Bool { (try? loadState()) != nil }

    /// Whether a vault is set up, told without a secret.
    public enum SetUpStatus: Equatable, Sendable {
        /// No state item: `finalize()` can set the vault up.
        case notSetUp
        /// A valid state item.
        case setUp
        /// A state item exists but is not a valid vault state (truncated, edited, or a newer
        /// version); the reason is `VaultError.corruptState`'s. Neither set-up nor unlocking proceeds.
        case corrupt(String)
    }

    /// Whether the vault is set up, not set up, or its stored state is corrupt. Throws only when
    /// the keychain cannot be read.
    public func setUpStatus() throws(VaultError) -> SetUpStatus {
        try sync()
        guard let data = try storedStateData() else { return .notSetUp }
        do {
            _ = try VaultState.decode(data)
            return .setUp
        } catch .corruptState(let reason) {
            return .corrupt(reason)
        }
    }

    /// Throws `notSetUp` or `corruptState` unless the vault is set up with a valid state.
    public func requireSetUp() throws(VaultError) {
        switch try setUpStatus() {
        case .setUp: return
        case .notSetUp: throw .notSetUp
        case .corrupt(let reason): throw .corruptState(reason)
        }
    }

    /// True when the vault has security questions and a recovery wrap.
    public var hasSecurityQuestionsAndAnswers: Bool { !securityQuestions.isEmpty }

    /// The security questions as stored (empty when the vault is not set up).
    public var securityQuestions: [String] { (try? loadState())?.questions ?? [] }

    /// The id of the application key new data is sealed under, and how many keys the vault holds.
    public var keyIds: (current: UInt32, all: [UInt32])? {
        guard let state = try? loadState() else { return nil }
        return (state.currentKeyId, state.keys.map(\.id).sorted())
    }

    /// Consecutive failed attempts recorded on disk.
    public var failedAttempts: Int { loadAttempts().failures }

    /// True until an unlock succeeds, and again after `purge()`.
    public var isLocked: Bool { inMemory.withLock { $0.unlocked == nil } }

    // MARK: Set-up

    /// Stores a passcode in memory (never on disk) for `finalize()`.
    public func setTemporaryPasscode(_ passcode: SecretBytes) throws(VaultError) {
        guard passcode.count > 0 else { throw .invalidSecret("the passcode is empty") }
        inMemory.withLock { $0.temporary.passcode = passcode }
    }

    /// Stores questions and their answers in memory (never on disk) for `finalize()`.
    public func setTemporarySecurityQuestions(_ questions: [String], answers: [String]) throws(VaultError) {
        try Self.validate(questions: questions, answers: answers)
        inMemory.withLock {
            $0.temporary.questions = questions
            $0.temporary.answers = answers
        }
    }

    /// Creates the vault key and the first application key, writes both wraps in one durable
    /// write, clears the temporary values, and leaves the vault unlocked.
    public func finalize() throws(VaultError) {
        // The in-process lock is held only to read and write fields, never across the KDF, the file
        // lock or fsync, so `isLocked` and sealing on other threads never wait on a set-up.
        let temporary = inMemory.withLock { $0.temporary }
        guard let passcode = temporary.passcode else { throw .incompleteSetUp("no temporary passcode") }
        guard let questions = temporary.questions, let answers = temporary.answers else {
            throw .incompleteSetUp("no temporary security questions and answers")
        }
        try withStateFileLock { () throws(VaultError) in
            try sync()
            if let existing = try storedStateData() {
                // A corrupt state is reported as such, not as a working vault.
                _ = try VaultState.decode(existing)
                throw .alreadySetUp
            }
            let vaultId = SecureRandom.bytes(count: 16)
            let vaultKey = SecretBytes.random(count: Envelope.keyByteCount)
            let applicationKey = SecretBytes.random(count: Envelope.keyByteCount)
            let kdf = try checkedWrapKDF(configuration.kdf ?? .default)
            // A counter left by an erased vault (a wipe that could not delete it, or a state
            // removed by hand) must not throttle or erase the new one.
            try resetFailures()
            let state = VaultState(
                version: VaultState.formatVersion, vaultId: vaultId,
                passcodeWrap: try Self.wrap(vaultKey, passphrase: passcode, kdf: kdf, context: VaultState.passcodeContext(vaultId: vaultId)),
                questions: questions,
                recoveryWrap: try Self.wrap(
                    vaultKey, passphrase: SecretBytes(try SecurityAnswers.passphrase(answers)), kdf: kdf,
                    context: VaultState.recoveryContext(vaultId: vaultId, questions: questions)),
                currentKeyId: 1,
                keys: [.init(id: 1, sealed: try Self.seal(applicationKey, vaultKey: vaultKey, vaultId: vaultId, keyId: 1))])
            try store(state)
            inMemory.withLock {
                $0.temporary = Temporary()
                $0.unlocked = Keys(vaultId: vaultId, vaultKey: vaultKey, applicationKeys: [1: applicationKey], currentKeyId: 1)
            }
        }
    }

    /// One-call set-up: the temporary passcode and questions, then `finalize()`.
    public func setUp(passcode: SecretBytes, questions: [String], answers: [String]) throws(VaultError) {
        try setTemporaryPasscode(passcode)
        try setTemporarySecurityQuestions(questions, answers: answers)
        try finalize()
    }

    // MARK: Unlocking

    /// Unlocks with the passcode. Throws `throttled` (no KDF work done) while a delay is pending,
    /// `wrongPasscode` (counted) for a wrong passcode, `wiped` when that failure reached the limit.
    /// A failure leaves an unlocked vault unlocked.
    public func unlock(passcode: SecretBytes) throws(VaultError) {
        try attempt(failure: .wrongPasscode) { state in
            (state.passcodeWrap, Array(VaultState.passcodeContext(vaultId: state.vaultId)), passcode)
        }
    }

    /// Unlocks with the answers to the security questions (normalized; see `SecurityAnswers`).
    /// Same throttling and failure rules as `unlock(passcode:)`.
    public func unlock(answers: [String]) throws(VaultError) {
        let passphrase = SecretBytes(try SecurityAnswers.passphrase(answers))
        try attempt(failure: .wrongAnswers) { state in
            (state.recoveryWrap, Array(VaultState.recoveryContext(vaultId: state.vaultId, questions: state.questions)), passphrase)
        }
    }

    /// Recovery (the seed's reset flow): unlock with the answers, then set `newPasscode`.
    public func recover(answers: [String], newPasscode: SecretBytes) throws(VaultError) {
        try unlock(answers: answers)
        try updatePasscode(newPasscode)
    }

    /// Locks: drops the vault and application keys, whose buffers are zeroed as they are released,
    /// and clears any temporary set-up values.
    public func purge() {
        inMemory.withLock {
            $0.unlocked = nil
            $0.temporary = Temporary()
        }
    }

    /// One unlock attempt. The throttle is checked and the attempt counted as a failure durably,
    /// under the vault's file lock, before any KDF work: concurrent guesses (threads or processes)
    /// each count, and a process killed during the KDF has already been counted. A success resets
    /// the counter. The KDF runs with no lock held; the application keys are then opened from the
    /// state as it is at that moment (a rotation meanwhile keeps its new key).
    ///
    /// Only a guess is counted: a wrap that cannot be opened whatever the secret (damaged, of a
    /// newer version, its cost above this vault's ceilings) throws before the count, so a damaged
    /// file never throttles or erases a vault; and a right secret resets the count before the
    /// application keys are opened, so a damaged application key is reported without counting.
    ///
    /// On a read-only keychain (`Keychain.isReadOnly`) nothing can be recorded: the throttle is
    /// checked but the attempt is not counted. Whoever can run it can read the file, and so can run
    /// the KDF against its wraps offline anyway; counting protects an app whose user cannot read
    /// its files.
    private func attempt(
        failure: VaultError,
        _ select: (VaultState) -> (wrap: Data, context: [UInt8], passphrase: SecretBytes)
    ) throws(VaultError) {
        let (state, inProgress) = try withStateFileLock { () throws(VaultError) -> (VaultState, AttemptInProgress?) in
            try sync()
            let state = try loadState()
            do throws(SecureCoreError) {
                try Envelope.checkPassphraseEnvelope(select(state).wrap, limits: configuration.kdfLimits)
            } catch {
                throw .crypto(error)
            }
            try repairDamagedAttempts()
            try checkThrottle()
            return (state, try countAttempt())
        }
        defer { inProgress?.end() }
        let (wrap, context, passphrase) = select(state)
        let vaultKey: SecretBytes
        do {
            vaultKey = try Self.unwrap(wrap, passphrase: passphrase, context: context, limits: configuration.kdfLimits)
        } catch .crypto(.authenticationFailed) {
            try withStateFileLock { () throws(VaultError) in
                try sync()
                try wipeIfLimitReached()
            }
            throw failure
        }
        try withStateFileLock { () throws(VaultError) in
            try sync()
            let current = try loadState()
            // Set up again during the KDF: the key opened belongs to the vault that was replaced.
            guard current.vaultId == state.vaultId else { throw .replaced }
            try resetFailures()
            let keys = try Self.openKeys(current, vaultKey: vaultKey)
            inMemory.withLock { $0.unlocked = keys }
        }
    }

    // MARK: Changing secrets (unlocked only)

    /// Re-wraps the vault key under `newPasscode` (data and application keys are untouched) in one
    /// durable write: a crash leaves either the old or the new passcode working.
    public func updatePasscode(_ newPasscode: SecretBytes) throws(VaultError) {
        guard newPasscode.count > 0 else { throw .invalidSecret("the passcode is empty") }
        try change { state, keys throws(VaultError) in
            state.passcodeWrap = try Self.wrap(
                keys.vaultKey, passphrase: newPasscode, kdf: try newWrapKDF(state),
                context: VaultState.passcodeContext(vaultId: state.vaultId))
        }
    }

    /// Replaces the questions and answers (re-wrapping the vault key under the new answers) in one
    /// durable write.
    public func updateSecurityQuestionsAndAnswers(questions: [String], answers: [String]) throws(VaultError) {
        try Self.validate(questions: questions, answers: answers)
        let passphrase = SecretBytes(try SecurityAnswers.passphrase(answers))
        try change { state, keys throws(VaultError) in
            state.questions = questions
            state.recoveryWrap = try Self.wrap(
                keys.vaultKey, passphrase: passphrase, kdf: try newWrapKDF(state),
                context: VaultState.recoveryContext(vaultId: state.vaultId, questions: questions))
        }
    }

    /// Runs `body` on the current state and keys under the vault's file lock (which orders every
    /// change, in this process and others) and stores the result durably. The in-process lock is
    /// taken only to read and publish the keys, so readers never wait on the KDF or fsync; a
    /// `purge()` meanwhile stays in effect.
    func change(_ body: (inout VaultState, inout Keys) throws(VaultError) -> Void) throws(VaultError) {
        try withStateFileLock { () throws(VaultError) in
            guard var keys = inMemory.withLock({ $0.unlocked }) else { throw .locked }
            try sync()
            var state = try loadState()
            // Set up again since this object unlocked: its keys would seal the new vault's state
            // under the old vault key, and no secret would open it again.
            guard state.vaultId == keys.vaultId else {
                inMemory.withLock { if $0.unlocked?.vaultId == keys.vaultId { $0.unlocked = nil } }
                throw .replaced
            }
            try body(&state, &keys)
            try store(state)
            inMemory.withLock { if $0.unlocked != nil { $0.unlocked = keys } }
        }
    }

    /// The application keys while unlocked (for sealing), without holding the lock during crypto.
    func currentKeys() throws(VaultError) -> Keys {
        guard let keys = inMemory.withLock({ $0.unlocked }) else { throw .locked }
        return keys
    }

    /// The KDF of a new wrap: the configured one, else the stored passcode wrap's when it meets the
    /// floor (`meetsTheFloor`) and stays within this vault's ceilings, else `PasswordKDF.default`.
    /// The stored header is authenticated only when a passcode opens it, so whoever can write the
    /// state file could otherwise set a cost of one round just before a passcode change, and the
    /// new wrap would be as cheap to guess.
    private func newWrapKDF(_ state: VaultState) throws(VaultError) -> PasswordKDF {
        if let kdf = configuration.kdf { return try checkedWrapKDF(kdf) }
        let stored: PasswordKDF?
        do {
            stored = try Envelope.header(of: state.passcodeWrap).kdf
        } catch {
            throw .corruptState("the passcode wrap header is not valid")
        }
        guard let stored, Self.meetsTheFloor(stored), (try? stored.validate(within: configuration.kdfLimits)) != nil else {
            return try checkedWrapKDF(.default)
        }
        return stored
    }

    /// Whether `kdf` costs at least the least `sf` itself sets up (`sf vault init --scrypt-log-n`):
    /// scrypt log2 N at least `PasswordKDF.minimumScryptLogN` with `PasswordKDF.default`'s r and p
    /// or more, PBKDF2-HMAC-SHA256 at least `PasswordKDF.minimumPBKDF2Rounds` rounds. A vault set
    /// up cheaper on purpose (a test's cost, say) gets the default at its next new wrap.
    static func meetsTheFloor(_ kdf: PasswordKDF) -> Bool {
        switch (kdf, PasswordKDF.default, PasswordKDF.pbkdf2Default) {
        case (.scrypt(let logN, let r, let p), .scrypt(_, let minimumR, let minimumP), _):
            return logN >= PasswordKDF.minimumScryptLogN && r >= minimumR && p >= minimumP
        case (.pbkdf2(let hash, let rounds), _, .pbkdf2(let defaultHash, _)):
            return hash == defaultHash && rounds >= PasswordKDF.minimumPBKDF2Rounds
        default:
            return false
        }
    }

    /// A wrap must be openable under this vault's own ceilings, or the vault could never be unlocked.
    private func checkedWrapKDF(_ kdf: PasswordKDF) throws(VaultError) -> PasswordKDF {
        do {
            try kdf.validate(within: configuration.kdfLimits)
        } catch {
            throw .crypto(error)
        }
        return kdf
    }

    private static func validate(questions: [String], answers: [String]) throws(VaultError) {
        guard !questions.isEmpty else { throw .invalidSecret("at least one security question is needed") }
        guard questions.count == answers.count else {
            throw .invalidSecret("\(questions.count) questions but \(answers.count) answers")
        }
        guard !questions.contains(where: { $0.allSatisfy(\.isWhitespace) }) else { throw .invalidSecret("a question is blank") }
        _ = try SecurityAnswers.passphrase(answers)
    }
}
