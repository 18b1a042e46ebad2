import Foundation
import SecureCore

/// Data sealed by the vault: `"SFV1" || u32be(keyId) || envelope`, the envelope a raw-key native
/// envelope under application key `keyId` whose context is `"SFV1" || keyId || caller context`.
extension Vault {
    static let sealedMagic = Array("SFV1".utf8)
    static let sealedHeaderCount = 8

    /// Seals `plaintext` under the current application key, binding `context`. Throws `locked`.
    public func encrypt(_ plaintext: some DataProtocol, context: some DataProtocol = Data()) throws(VaultError) -> Data {
        let keys = try currentKeys()
        guard let key = keys.applicationKeys[keys.currentKeyId] else { throw .unknownKeyId(keys.currentKeyId) }
        var output = Data(Self.sealedMagic)
        withUnsafeBytes(of: keys.currentKeyId.bigEndian) { output.append(contentsOf: $0) }
        let header = output
        do {
            output.append(try Envelope.seal(plaintext, key: key, context: header + context))
        } catch {
            throw .crypto(error)
        }
        return output
    }

    /// Opens what `encrypt` produced under any application key the vault holds, with the same
    /// `context`. Throws `locked`, `unknownKeyId`, or `crypto` (`authenticationFailed` for modified
    /// data or a wrong context, `truncated`, `unrecognizedFormat`).
    public func decrypt(_ sealed: some DataProtocol, context: some DataProtocol = Data()) throws(VaultError) -> Data {
        let bytes = sealed as? Data ?? Data(sealed)
        guard bytes.count >= Self.sealedHeaderCount else {
            throw .crypto(bytes.elementsEqual(Self.sealedMagic.prefix(bytes.count)) ? .truncated : .unrecognizedFormat(expected: "SFV1"))
        }
        let header = bytes.prefix(Self.sealedHeaderCount)
        guard let keyId = Self.applicationKeyId(ofSealed: header) else { throw .crypto(.unrecognizedFormat(expected: "SFV1")) }
        let keys = try currentKeys()
        guard let key = keys.applicationKeys[keyId] else { throw .unknownKeyId(keyId) }
        do {
            return try Envelope.open(bytes.dropFirst(Self.sealedHeaderCount), key: key, context: Data(header) + context)
        } catch {
            throw .crypto(error)
        }
    }

    // MARK: ItemSealer

    /// `encrypt`, as an `ItemSealer` (for SecureKeychain): a locked, not set-up or wiped vault is
    /// `SecureCoreError.locked`, a sealing failure its `SecureCoreError`, anything else
    /// `sealerFailed` carrying the `VaultError`.
    public func seal(_ plaintext: Data, context: Data) throws(SecureCoreError) -> Data {
        do {
            return try encrypt(plaintext, context: context)
        } catch {
            throw Self.sealerError(error)
        }
    }

    /// `decrypt`, as an `ItemSealer` (for SecureKeychain): errors as for `seal`; data sealed under
    /// an application key this vault does not hold is `authenticationFailed`.
    public func open(_ sealed: Data, context: Data) throws(SecureCoreError) -> Data {
        do {
            return try decrypt(sealed, context: context)
        } catch {
            throw Self.sealerError(error)
        }
    }

    private static func sealerError(_ error: VaultError) -> SecureCoreError {
        switch error {
        case .locked, .notSetUp, .wiped: .locked
        case .crypto(let error): error
        case .unknownKeyId: .authenticationFailed
        default: .sealerFailed(SealerFailure(error))
        }
    }
}
