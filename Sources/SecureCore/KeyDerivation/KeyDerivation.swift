import Crypto
import Foundation

/// HKDF (RFC 5869) for deriving keys from high-entropy input (not from passwords: use `PasswordKDF`).
public enum KeyDerivation {
    /// HKDF-Extract-then-Expand with `function` (SHA-256/384/512). Throws `invalidParameter` when
    /// `outputByteCount` is not in 1...255·hashLength (the RFC's limit).
    public static func hkdf<S: DataProtocol, I: DataProtocol>(
        inputKeyMaterial: some ContiguousBytes, salt: S, info: I, outputByteCount: Int,
        using function: HashFunction = .sha256
    ) throws(SecureCoreError) -> SecretBytes {
        guard !function.isInsecure else { throw SecureCoreError.invalidParameter("HKDF requires a SHA-2 function") }
        guard outputByteCount >= 1, outputByteCount <= 255 * function.outputByteCount else {
            throw SecureCoreError.invalidParameter(
                "HKDF output length must be 1...\(255 * function.outputByteCount) bytes, not \(outputByteCount)")
        }
        let ikm = SymmetricKey(data: inputKeyMaterial)
        let key: SymmetricKey
        switch function.kind {
        case .sha384: key = HKDF<SHA384>.deriveKey(inputKeyMaterial: ikm, salt: salt, info: info, outputByteCount: outputByteCount)
        case .sha512: key = HKDF<SHA512>.deriveKey(inputKeyMaterial: ikm, salt: salt, info: info, outputByteCount: outputByteCount)
        default: key = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: salt, info: info, outputByteCount: outputByteCount)
        }
        return SecretBytes(key)
    }
}
