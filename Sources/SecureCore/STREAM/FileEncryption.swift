import Crypto
import Foundation

/// Encrypting and decrypting files (the seed's `EncryptFileToPath`) in the chunked `SFS1` format:
/// memory stays bounded whatever the file size, and a destination file is written atomically, so a
/// failure (wrong key, tampering, truncation, full disk) leaves no output file at all. A device or
/// pipe destination is written in place, never replaced (see `OutputDestination`).
public enum FileEncryption {
    /// Encrypts the file at `source` to `destination` under a 32-byte key.
    /// Throws `SecureCoreError`: `.io`/`.fileExists` for the files, `invalidParameter` for a bad key or KDF.
    public static func encryptFile(
        at source: String, to destination: String, key: SymmetricKey,
        algorithm: Envelope.Algorithm = .aes256GCM, context: some DataProtocol = Data()
    ) throws(SecureCoreError) {
        let input = try FileInput(path: source)
        try OutputDestination.write(to: destination, permissions: 0o600, overwrite: true, { output throws(SecureCoreError) in
            try StreamEnvelope.encrypt(from: input, to: output, key: key, algorithm: algorithm, context: context)
        }, as: { $0 })
    }

    /// Encrypts the file at `source` to `destination` under a passphrase.
    /// Throws `SecureCoreError`: `.io`/`.fileExists` for the files, `invalidParameter` for a bad key or KDF.
    public static func encryptFile<S: DataProtocol>(
        at source: String, to destination: String, passphrase: S, kdf: PasswordKDF = .default,
        algorithm: Envelope.Algorithm = .aes256GCM, context: some DataProtocol = Data()
    ) throws(SecureCoreError) {
        let input = try FileInput(path: source)
        try OutputDestination.write(to: destination, permissions: 0o600, overwrite: true, { output throws(SecureCoreError) in
            try StreamEnvelope.encrypt(
                from: input, to: output, passphrase: passphrase, kdf: kdf, algorithm: algorithm, context: context)
        }, as: { $0 })
    }

    /// Decrypts the file at `source` to `destination` under a 32-byte key; all or nothing.
    /// Throws `SecureCoreError`: `.io` for the files, or as `StreamEnvelope.decrypt` (`authenticationFailed`, `truncated`, `trailingData`, ...).
    public static func decryptFile(
        at source: String, to destination: String, key: SymmetricKey, context: some DataProtocol = Data()
    ) throws(SecureCoreError) {
        let input = try FileInput(path: source)
        try OutputDestination.write(to: destination, permissions: 0o600, overwrite: true, { output throws(SecureCoreError) in
            try StreamEnvelope.decrypt(from: input, to: output, key: key, context: context)
        }, as: { $0 })
    }

    /// Decrypts the file at `source` to `destination` under a passphrase; all or nothing.
    /// Throws `SecureCoreError`: `.io` for the files, or as `StreamEnvelope.decrypt` (`authenticationFailed`, `truncated`, `trailingData`, ...).
    public static func decryptFile<S: DataProtocol>(
        at source: String, to destination: String, passphrase: S, context: some DataProtocol = Data(),
        limits: KDFLimits = .default
    ) throws(SecureCoreError) {
        let input = try FileInput(path: source)
        try OutputDestination.write(to: destination, permissions: 0o600, overwrite: true, { output throws(SecureCoreError) in
            try StreamEnvelope.decrypt(from: input, to: output, passphrase: passphrase, context: context, limits: limits)
        }, as: { $0 })
    }
}
