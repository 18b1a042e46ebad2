import Crypto
import CryptoExtras
import Foundation

/// Reader for data written by iMAS Secure Foundation's `IMSCryptoUtilsEncryptData`, so existing
/// application data can be migrated to the native envelope. **Legacy: read only.**
///
/// Layout: `IV (16) || AES-CBC-PKCS7(plaintext || chk)`, where `chk` is the two's complement of the
/// 8-bit sum of the plaintext; the key is PBKDF2-HMAC-SHA256 of the password, 1000 rounds, 32 bytes.
/// The padding and one-byte checksum are not authentication: a wrong key is detected only with
/// probability about 1 − 1/65,536, and modified data may go unnoticed. Re-seal with `Envelope`.
public enum LegacyIMAS {
    /// The seed's key derivation: PBKDF2-HMAC-SHA256, 1000 rounds, 32-byte key, from the app's salt.
    /// Throws `SecureCoreError` only as `PasswordKDF.deriveKey` does (not for these fixed parameters).
    public static func deriveKey<P: DataProtocol, S: DataProtocol>(password: P, salt: S) throws(SecureCoreError) -> SecretBytes {
        try PasswordKDF.pbkdf2(hash: .sha256, rounds: 1000).deriveKey(from: password, salt: salt, outputByteCount: 32)
    }

    /// Decrypts a legacy blob. Throws `truncated` when it cannot hold an IV and one block, and
    /// `authenticationFailed` when the padding or the checksum do not verify.
    public static func decrypt<D: DataProtocol>(_ blob: D, key: SecretBytes) throws(SecureCoreError) -> Data {
        let bytes = Data(blob)
        guard bytes.count >= 32, (bytes.count - 16) % 16 == 0 else { throw SecureCoreError.truncated }
        guard [16, 24, 32].contains(key.count) else {
            throw SecureCoreError.invalidParameter("legacy AES key must be 16, 24 or 32 bytes")
        }
        var padded: Data
        do {
            let iv = try AES._CBC.IV(ivBytes: bytes.prefix(16))
            padded = try AES._CBC.decrypt(bytes.dropFirst(16), using: key.symmetricKey, iv: iv)
        } catch {
            throw SecureCoreError.authenticationFailed
        }
        guard let checksum = padded.last else { throw SecureCoreError.authenticationFailed }
        let plaintext = padded.dropLast()
        let sum = plaintext.reduce(UInt8(0), &+)
        guard sum &+ checksum == 0 else {
            padded.zeroize()
            throw SecureCoreError.authenticationFailed
        }
        return Data(plaintext)
    }
}
