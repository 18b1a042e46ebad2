import Foundation
import SecureCore

extension Vault {
    /// The vault's calls that can wait (a passcode KDF of a fraction of a second or more, the
    /// state file's lock, fsync) as async functions, for callers in Swift concurrency:
    /// `try await vault.async.unlock(passcode: p)`.
    ///
    /// Each call runs the synchronous method of the same name, with the same guarantees and
    /// errors, on one of the vault calls' own threads (`BlockingCallPool`, shared by every vault of the
    /// process), outside Swift's cooperative pool, so awaiting it never blocks
    /// a thread that other tasks need. Once queued, a call runs to completion even if the task
    /// awaiting it is cancelled: a KDF cannot stop half-way, and an attempt is counted before it
    /// starts. The synchronous methods stay as they are for callers outside async code.
    public var async: Async { Async(vault: self) }

    /// See `Vault.async`.
    public struct Async: Sendable {
        /// The vault these calls act on.
        public let vault: Vault

        /// `Vault.setUp(passcode:questions:answers:)`, awaited.
        public func setUp(passcode: SecretBytes, questions: [String], answers: [String]) async throws(VaultError) {
            try await run { () throws(VaultError) in try vault.setUp(passcode: passcode, questions: questions, answers: answers) }
        }

        /// `Vault.finalize()`, awaited.
        public func finalize() async throws(VaultError) {
            try await run { () throws(VaultError) in try vault.finalize() }
        }

        /// `Vault.unlock(passcode:)`, awaited.
        public func unlock(passcode: SecretBytes) async throws(VaultError) {
            try await run { () throws(VaultError) in try vault.unlock(passcode: passcode) }
        }

        /// `Vault.unlock(answers:)`, awaited.
        public func unlock(answers: [String]) async throws(VaultError) {
            try await run { () throws(VaultError) in try vault.unlock(answers: answers) }
        }

        /// `Vault.recover(answers:newPasscode:)`, awaited.
        public func recover(answers: [String], newPasscode: SecretBytes) async throws(VaultError) {
            try await run { () throws(VaultError) in try vault.recover(answers: answers, newPasscode: newPasscode) }
        }

        /// `Vault.updatePasscode(_:)`, awaited.
        public func updatePasscode(_ newPasscode: SecretBytes) async throws(VaultError) {
            try await run { () throws(VaultError) in try vault.updatePasscode(newPasscode) }
        }

        /// `Vault.updateSecurityQuestionsAndAnswers(questions:answers:)`, awaited.
        public func updateSecurityQuestionsAndAnswers(questions: [String], answers: [String]) async throws(VaultError) {
            try await run { () throws(VaultError) in try vault.updateSecurityQuestionsAndAnswers(questions: questions, answers: answers) }
        }

        /// `Vault.rotateKey()`, awaited.
        public func rotateKey() async throws(VaultError) -> Vault.Rotation {
            try await run { () throws(VaultError) in try vault.rotateKey() }
        }

        /// `Vault.retireKey(_:force:)`, awaited.
        public func retireKey(_ keyId: UInt32, force: Bool = false) async throws(VaultError) {
            try await run { () throws(VaultError) in try vault.retireKey(keyId, force: force) }
        }

        /// Runs `body` on one of `Async.threads`.
        private func run<R: Sendable>(_ body: @escaping @Sendable () throws(VaultError) -> R) async throws(VaultError) -> R {
            try await Self.threads.run(body)
        }

        /// The threads of every vault's async calls: the calls are mostly KDF work (one per core would
        /// do), but one may wait on another process's lock of the state file, so there are more.
        private static let threads = BlockingCallPool(
            width: max(16, ProcessInfo.processInfo.activeProcessorCount), name: "SecureVault")
    }
}
