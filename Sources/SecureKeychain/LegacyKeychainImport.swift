import Foundation
import SecureCore

/// Reading the iMAS keychain file (legacy): a binary or XML property list whose root dictionary maps
/// service → (account → password data). Passwords stored as strings are taken as UTF-8.
extension Keychain {
    /// What an import did.
    public struct LegacyImportSummary: Sendable, Equatable {
        /// Passwords written.
        public var imported: Int
        /// Passwords left alone because the item already existed (without `overwrite`).
        public var skipped: Int
    }

    /// Imports every password of a legacy iMAS keychain file into the default access group. Existing
    /// items are kept unless `overwrite`. All or nothing: the whole file is validated, and every
    /// entry checked against the keychain (an internal name, or with `overwrite` a secure item the
    /// clear password would replace: `protectionMismatch`), before one change records them all, so
    /// they are written in one transaction and a failure leaves the keychain untouched. Call
    /// `synchronize()` to make it durable.
    @discardableResult
    public func importLegacy(_ fileContents: Data, overwrite: Bool = false) throws(KeychainError) -> LegacyImportSummary {
        let entries = try Self.legacyEntries(fileContents).map { entry in
            (identity: KeychainItem.Identity(service: entry.service, account: entry.account), password: entry.password)
        }
        for entry in entries { try Self.refuseInternal(entry.identity) }
        let now = Date().timeIntervalSince1970
        return try engine.mutate { (s: inout KeychainEngine.State) throws(KeychainError) in
            let importing = entries.filter { overwrite || s.items[$0.identity] == nil }
            if let sealed = importing.first(where: { s.items[$0.identity]?.isSealed == true }) {
                throw .protectionMismatch(service: sealed.identity.service, account: sealed.identity.account, isSealed: true)
            }
            for entry in importing {
                s.record(entry.identity) { existing in
                    StoredItem(
                        attributes: existing?.attributes ?? .init(), created: existing?.created ?? now,
                        modified: now, isSealed: false, value: Array(entry.password))
                }
            }
            return LegacyImportSummary(imported: importing.count, skipped: entries.count - importing.count)
        }
    }

    /// The (service, account, password) triples of a legacy file, sorted by service then account.
    static func legacyEntries(_ contents: Data) throws(KeychainError) -> [(service: String, account: String, password: Data)] {
        // PropertyListDecoder, not PropertyListSerialization: on Linux the latter crashes (null
        // dereference while bridging) on a binary plist holding a set (found by Fuzz/FuzzLegacyKeychain).
        // Decoded to a fixed depth (root, service, account): a binary plist's objects may refer to
        // each other in a cycle, which a recursive decoding would follow forever.
        // Foundation traps on a binary plist object that runs past the data: checked first.
        if contents.starts(with: Array("bplist".utf8)), !BinaryPropertyListCheck.isWellFormed(contents) {
            throw .invalidLegacyFile("not a property list")
        }
        let root: LegacyLevel<LegacyLevel<LegacyPassword>>
        do {
            root = try PropertyListDecoder().decode(LegacyLevel<LegacyLevel<LegacyPassword>>.self, from: contents)
        } catch {
            throw .invalidLegacyFile("not a property list")
        }
        guard case .dictionary(let services) = root else { throw .invalidLegacyFile("the root is not a dictionary of services") }
        var entries: [(service: String, account: String, password: Data)] = []
        for (service, value) in services {
            guard case .dictionary(let accounts) = value else {
                throw .invalidLegacyFile("service '\(PrintableText.escaped(service))' is not a dictionary of accounts")
            }
            for (account, password) in accounts {
                switch password {
                case .data(let data): entries.append((service, account, data))
                case .string(let text): entries.append((service, account, Data(text.utf8)))
                default: throw .invalidLegacyFile("the password of '\(PrintableText.escaped(service))'/'\(PrintableText.escaped(account))' is neither data nor a string")
                }
            }
        }
        return entries.sorted { ($0.service, $0.account) < ($1.service, $1.account) }
    }
}

/// One level of a legacy keychain file: a dictionary of `Value`s, or anything else.
private enum LegacyLevel<Value: Decodable>: Decodable {
    case dictionary([String: Value])
    case other

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self = (try? container.decode([String: Value].self)).map(Self.dictionary) ?? .other
    }
}

/// A password in a legacy keychain file: data, a string (taken as UTF-8), or anything else.
private enum LegacyPassword: Decodable {
    case string(String)
    case data(Data)
    case other

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let data = try? container.decode(Data.self) {
            self = .data(data)
        } else {
            self = .other
        }
    }
}
