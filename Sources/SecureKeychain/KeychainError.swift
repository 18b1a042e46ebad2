import SecureCore
import SQLiteSupport

/// Every failure SecureKeychain reports. Each case names one cause; `description` is a sentence a
/// person can act on and never contains item values.
public enum KeychainError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `add` found an item with the same class, access group, service and account.
    case duplicateItem(service: String, account: String)
    /// No item matches the identity or query (`nil` parts matched anything).
    case itemNotFound(service: String?, account: String?)
    /// The sealer cannot currently seal or open values (for example the vault is locked).
    case locked
    /// A sealed value failed to open: it was modified, copied from another item, or sealed under another key.
    case authenticationFailed(service: String, account: String)
    /// The sealer failed for a reason other than locking (its `SecureCoreError`).
    case sealingFailed(SecureCoreError)
    /// The item is sealed and must be read or replaced with the secure API (a clear write would
    /// downgrade it), or is clear and cannot be read with it.
    case protectionMismatch(service: String, account: String, isSealed: Bool)
    /// A password read as a string is not valid UTF-8.
    case valueNotText(service: String, account: String)
    /// SQLite reported an error (file unreadable, disk full, lock held too long, corruption, ...).
    case storage(path: String, code: Int32, message: String)
    /// The file is a SQLite database but not a SecureFoundation keychain.
    case notAKeychain(path: String)
    /// The file was written by a newer version of this library.
    case unsupportedSchemaVersion(found: Int64, supported: Int64)
    /// `PRAGMA integrity_check` reported problems.
    case corrupted(path: String, details: String)
    /// A legacy iMAS keychain file is not a property list of service → account → data.
    case invalidLegacyFile(String)
    /// No keychain location could be derived from the environment, or a path is unusable.
    case invalidLocation(String)
    /// The keychain was closed; no further changes are accepted.
    case closed
    /// The keychain file (or its directory) cannot be written by this process, so it was opened for
    /// reading only: reads work, and this write was refused without touching the file.
    case readOnly(path: String, reason: String)
    /// A write or delete through the public API named one of SecureFoundation's internal items
    /// (the vault's state); they change only through their owner (`Vault`).
    case internalItem(service: String, account: String?)

    /// What went wrong, in words for a user; never a secret.
    public var description: String {
        switch self {
        case .duplicateItem(let service, let account):
            return "an item for service '\(PrintableText.escaped(service))' and account '\(PrintableText.escaped(account))' already exists"
        case .itemNotFound(let service, let account):
            switch (service, account) {
            case let (service?, account?): return "no item for service '\(PrintableText.escaped(service))' and account '\(PrintableText.escaped(account))'"
            case let (service?, nil): return "no item for service '\(PrintableText.escaped(service))'"
            case let (nil, account?): return "no item for account '\(PrintableText.escaped(account))'"
            case (nil, nil): return "no matching item"
            }
        case .locked:
            return "the keychain's sealer is locked: unlock the vault to read or write secure items"
        case .authenticationFailed(let service, let account):
            return "the sealed value of service '\(PrintableText.escaped(service))' account '\(PrintableText.escaped(account))' failed authentication: "
                + "it was modified, moved from another item, or sealed under another key"
        case .sealingFailed(let reason):
            return "sealing failed: \(reason.description)"
        case .protectionMismatch(let service, let account, let isSealed):
            return isSealed
                ? "the item for service '\(PrintableText.escaped(service))' and account '\(PrintableText.escaped(account))' is sealed; read or replace it with the secure API"
                : "the item for service '\(PrintableText.escaped(service))' and account '\(PrintableText.escaped(account))' is not sealed"
        case .valueNotText(let service, let account):
            return "the value for service '\(PrintableText.escaped(service))' and account '\(PrintableText.escaped(account))' is not UTF-8 text"
        case .storage(let path, let code, let message):
            return SQLiteError(path: path, code: code, message: message).description
        case .notAKeychain(let path):
            return "\(PrintableText.escaped(path)) is a database but not a SecureFoundation keychain"
        case .unsupportedSchemaVersion(let found, let supported):
            return "keychain schema version \(found) is newer than this library supports (\(supported)); upgrade"
        case .corrupted(let path, let details):
            return "\(PrintableText.escaped(path)) failed its integrity check: \(details)"
        case .invalidLegacyFile(let reason):
            return "not a legacy iMAS keychain file: \(reason)"
        case .invalidLocation(let reason):
            return "keychain location: \(reason)"
        case .closed:
            return "the keychain is closed"
        case .readOnly(let path, let reason):
            return "\(PrintableText.escaped(path)) is read-only for this process (a read-only file system, or the file or its directory is not writable): \(reason)"
        case .internalItem(let service, let account):
            return "service '\(PrintableText.escaped(service))'\(account.map { " account '\(PrintableText.escaped($0))'" } ?? "") is SecureFoundation's internal item; "
                + "it cannot be changed or deleted through the password API (use sf vault)"
        }
    }
}
