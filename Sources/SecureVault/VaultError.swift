import SecureCore
import SecureKeychain

/// Every failure SecureVault reports. Each case names one cause; `description` is a sentence a
/// person can act on and never contains a passcode, an answer or key material.
public enum VaultError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The keychain holds no vault with this name: set one up first.
    case notSetUp
    /// A vault with this name already exists; set-up would replace its key.
    case alreadySetUp
    /// The operation needs the application key: unlock first.
    case locked
    /// The passcode did not unwrap the key. Nothing changed except the failure counter.
    case wrongPasscode
    /// The answers did not unwrap the key (or the stored questions were modified).
    case wrongAnswers
    /// Too many failed attempts: the next attempt is accepted after `retryAfter`.
    case throttled(retryAfter: Duration)
    /// The configured number of failed attempts was reached and the vault was erased.
    case wiped
    /// `finalize()` was called before a temporary passcode and questions were stored.
    case incompleteSetUp(String)
    /// Questions or answers are empty, blank, or their counts differ; or the passcode is empty.
    case invalidSecret(String)
    /// The stored vault state is not valid (damaged or written by a newer version).
    case corruptState(String)
    /// Data was sealed under an application key this vault does not hold.
    case unknownKeyId(UInt32)
    /// The keychain holding the vault failed.
    case keychain(KeychainError)
    /// Sealing or opening data failed (modified or truncated data, wrong context, bad parameters).
    case crypto(SecureCoreError)
    /// The lock file that serializes changes to the vault state could not be opened or locked.
    case stateLock(path: String, reason: String)
    /// `retireKey` refused: the application key is current or still seals keychain items.
    case keyInUse(UInt32, reason: String)
    /// The vault was set up again (a new vault, under a new vault key) since this object
    /// unlocked it or read it for this attempt: its keys belong to the vault that was replaced.
    /// Nothing was written; it is locked now. Unlock the new vault.
    case replaced

    /// What went wrong, in words for a user; never a secret.
    public var description: String {
        switch self {
        case .notSetUp: return "no vault is set up in this keychain (run sf vault init)"
        case .alreadySetUp: return "a vault is already set up in this keychain"
        case .locked: return "the vault is locked: unlock it with the passcode or the security answers"
        case .wrongPasscode: return "wrong passcode"
        case .wrongAnswers: return "wrong answers to the security questions (or the stored questions were modified)"
        case .throttled(let wait):
            let seconds = Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up))
            return "too many failed attempts: try again in \(seconds) s"
        case .wiped: return "too many failed attempts: the vault was erased"
        case .incompleteSetUp(let missing): return "set-up is incomplete: \(missing)"
        case .invalidSecret(let reason): return "invalid secret: \(reason)"
        case .corruptState(let reason): return "the stored vault state is not valid: \(reason)"
        case .unknownKeyId(let id): return "the data was sealed under application key \(id), which this vault does not hold"
        case .keychain(let error): return error.description
        case .crypto(let error): return error.description
        case .stateLock(let path, let reason): return "\(path): cannot lock the vault state: \(reason)"
        case .keyInUse(let id, let reason): return "application key \(id) cannot be retired: \(reason)"
        case .replaced: return "the vault was set up again since it was unlocked: its keys are gone; unlock the new vault"
        }
    }
}
