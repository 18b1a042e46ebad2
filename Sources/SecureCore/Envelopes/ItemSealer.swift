import Foundation

/// A capability that seals and opens small values under a key the caller does not see.
///
/// SecureKeychain uses it for "secure" items without depending on who holds the key; SecureVault
/// implements it with the application key. `context` is bound as associated data: a value sealed
/// under one context fails to open under another with `SecureCoreError.authenticationFailed`.
/// A sealer that cannot currently work (a locked vault) throws `SecureCoreError.locked`.
public protocol ItemSealer: Sendable {
    /// Seals `plaintext`, binding `context`.
    /// Throws `SecureCoreError.locked` when the sealer cannot currently work, another case otherwise.
    func seal(_ plaintext: Data, context: Data) throws(SecureCoreError) -> Data
    /// Opens what `seal` produced with the same `context`.
    /// Throws `authenticationFailed` (wrong context or key, modified value) or `locked`.
    func open(_ sealed: Data, context: Data) throws(SecureCoreError) -> Data
}

/// An `ItemSealer` over one fixed raw key, using the native envelope. Useful for tests and for
/// applications that manage their own key.
public struct KeyItemSealer: ItemSealer {
    private let key: SecretBytes
    private let algorithm: Envelope.Algorithm

    /// A sealer using `key` (32 bytes) with `algorithm`.
    /// Throws `SecureCoreError.invalidParameter` when `key` is not 32 bytes.
    public init(key: SecretBytes, algorithm: Envelope.Algorithm = .aes256GCM) throws(SecureCoreError) {
        guard key.count == Envelope.keyByteCount else {
            throw SecureCoreError.invalidParameter("key must be \(Envelope.keyByteCount) bytes")
        }
        self.key = key
        self.algorithm = algorithm
    }

    /// Seals as `Envelope.seal`; throws as it does.
    public func seal(_ plaintext: Data, context: Data) throws(SecureCoreError) -> Data {
        try Envelope.seal(plaintext, key: key, algorithm: algorithm, context: context)
    }

    /// Opens as `Envelope.open`; throws `authenticationFailed` for a wrong context or modified value.
    public func open(_ sealed: Data, context: Data) throws(SecureCoreError) -> Data {
        try Envelope.open(sealed, key: key, context: context)
    }
}

/// An `ItemSealer` keyed by a passphrase, for applications without a vault: each value is a
/// passphrase envelope (scrypt with a fresh salt per value, parameters stored), so it opens with the
/// same passphrase and context only. A wrong passphrase fails with `authenticationFailed`.
public struct PassphraseItemSealer: ItemSealer {
    private let passphrase: SecretBytes
    private let kdf: PasswordKDF
    private let limits: KDFLimits

    /// A sealer for `passphrase`; new values use `kdf`, stored values are opened within `limits`.
    /// Throws `SecureCoreError.invalidParameter` for an empty passphrase, `costAboveCeiling` for a KDF above `limits`.
    public init(passphrase: SecretBytes, kdf: PasswordKDF = .default, limits: KDFLimits = .default) throws(SecureCoreError) {
        guard passphrase.count > 0 else { throw SecureCoreError.invalidParameter("the passphrase is empty") }
        try kdf.validate(within: limits)
        self.passphrase = passphrase
        self.kdf = kdf
        self.limits = limits
    }

    /// Seals as a passphrase `Envelope`; throws as `Envelope.seal(_:passphrase:kdf:algorithm:context:)`.
    public func seal(_ plaintext: Data, context: Data) throws(SecureCoreError) -> Data {
        try passphrase.withUnsafeBytes { bytes throws(SecureCoreError) in try Envelope.seal(plaintext, passphrase: bytes, kdf: kdf, context: context) }
    }

    /// Opens within `limits`; throws `authenticationFailed`, `costAboveCeiling` or a header error.
    public func open(_ sealed: Data, context: Data) throws(SecureCoreError) -> Data {
        try passphrase.withUnsafeBytes { bytes throws(SecureCoreError) in try Envelope.open(sealed, passphrase: bytes, context: context, limits: limits) }
    }
}
