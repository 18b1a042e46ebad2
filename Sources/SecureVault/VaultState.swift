import Foundation
import SecureCore
import SecureKeychain

/// The vault's persistent state: one keychain item, so every change (a new passcode wrap, new
/// questions, a rotated key) is one atomic write. Layout in docs/FORMATS.md ("SecureVault").
struct VaultState: Codable, Equatable, Sendable {
    /// One application key, sealed under the vault key.
    struct WrappedKey: Codable, Equatable, Sendable {
        var id: UInt32
        var sealed: Data
    }

    static let formatVersion = 1

    var version: Int
    /// 16 random bytes naming this vault; bound into every wrap.
    var vaultId: Data
    /// The vault key sealed in a scrypt envelope under the passcode.
    var passcodeWrap: Data
    /// The questions exactly as shown; bound into `recoveryWrap`.
    var questions: [String]
    /// The vault key sealed in a scrypt envelope under the combined normalized answers.
    var recoveryWrap: Data
    /// The key id new data is sealed under.
    var currentKeyId: UInt32
    /// Every application key, current and older.
    var keys: [WrappedKey]

    static func decode(_ data: Data) throws(VaultError) -> VaultState {
        let state: VaultState
        do {
            state = try JSONDecoder().decode(VaultState.self, from: data)
        } catch {
            throw .corruptState("not a vault state item")
        }
        guard state.version == formatVersion else { throw .corruptState("unsupported version \(state.version)") }
        guard state.vaultId.count == 16 else { throw .corruptState("vault id must be 16 bytes") }
        guard state.keys.contains(where: { $0.id == state.currentKeyId }) else {
            throw .corruptState("the current key \(state.currentKeyId) is missing")
        }
        guard Set(state.keys.map(\.id)).count == state.keys.count else { throw .corruptState("duplicate key ids") }
        return state
    }

    // MARK: Associated data (contexts)

    /// Context of the passcode wrap: `"SFVW" || 0x01 || vaultId`.
    static func passcodeContext(vaultId: Data) -> Data {
        Data("SFVW".utf8) + [0x01] + vaultId
    }

    /// Context of the recovery wrap: `"SFVW" || 0x02 || vaultId || questions`, the questions
    /// length-prefixed (`"SFVQ" || u32be(count) || (u32be(len) || UTF-8)*`).
    static func recoveryContext(vaultId: Data, questions: [String]) -> Data {
        Data("SFVW".utf8) + [0x02] + vaultId + SecurityAnswers.lengthPrefixed(questions, magic: "SFVQ")
    }

    /// Context of an application key sealed under the vault key: `"SFVK" || vaultId || u32be(keyId)`.
    static func keyContext(vaultId: Data, keyId: UInt32) -> Data {
        Data("SFVK".utf8) + vaultId + withUnsafeBytes(of: keyId.bigEndian, Array.init)
    }
}

/// The failed-attempt counter: its own keychain item, so counting never rewrites the wraps.
struct VaultAttempts: Codable, Equatable, Sendable {
    var failures: Int
    /// Seconds since 1970 of the last failure.
    var lastFailure: Double

    static let none = VaultAttempts(failures: 0, lastFailure: 0)

    /// The counter stored as `data`, nil when it is damaged (the vault counts that as the most
    /// restrictive value rather than as zero failures).
    static func decode(_ data: Data) -> VaultAttempts? {
        try? JSONDecoder().decode(VaultAttempts.self, from: data)
    }
}

extension Encodable {
    /// The value as JSON with sorted keys, so that one value has one encoding: how the vault's
    /// items (state, failure counter, holders) are stored. Encoding plain strings, integers and
    /// bytes cannot fail.
    func canonicalJSON() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)) ?? Data()
    }
}
