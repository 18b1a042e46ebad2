import Crypto
import Foundation
import SecureCore
import SwiftASN1
import CryptoExtras

/// Passphrase-encrypted PKCS#8 (`EncryptedPrivateKeyInfo`, RFC 5958) with PBES2 (RFC 8018):
/// PBKDF2-HMAC-SHA256 and AES-256-CBC, the structure `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes.
/// Reading also accepts PBKDF2 with HMAC-SHA1/384/512 and AES-128/192-CBC, as OpenSSL may produce.
public enum EncryptedPKCS8 {
    /// PBKDF2 iterations written by default (OWASP's figure for PBKDF2-HMAC-SHA256).
    public static let defaultIterations = 600_000

    /// Encrypts the PKCS#8 encoding of `key` under `passphrase` with a fresh 16-byte salt and IV.
    /// Throws `KeyError.costAboveCeiling` for an iteration count outside 1...2³²−1.
    public static func encrypt(
        _ key: AsymmetricPrivateKey, passphrase: some DataProtocol, iterations: Int = defaultIterations
    ) throws(KeyError) -> Data {
        guard iterations >= 1, iterations <= UInt32.max else { throw KeyError.costAboveCeiling("PBKDF2 iterations \(iterations)") }
        let salt = Array(SecureRandom.bytes(count: 16)), iv = Array(SecureRandom.bytes(count: 16))
        let aesKey: SecretBytes
        do {
            aesKey = try PasswordKDF.pbkdf2(hash: .sha256, rounds: UInt32(iterations))
                .deriveKey(from: passphrase, salt: salt, outputByteCount: 32, limits: .unlimited)
        } catch {
            throw .kdf(error)
        }
        let ciphertext: Data
        do {
            ciphertext = try key.pkcs8DERRepresentation.withUnsafeBytes { plaintext in
                try AES._CBC.encrypt(plaintext, using: aesKey.symmetricKey, iv: AES._CBC.IV(ivBytes: iv))
            }
        } catch {
            throw KeyError.invalidKey("AES-256-CBC refused the derived key")  // not reached: 32-byte key, 16-byte IV
        }
        let parameters = PBES2Parameters(salt: salt, iterations: iterations, prf: OID.hmacWithSHA256, cipher: OID.aes256CBC, iv: iv)
        return Data(DER.encoded(EncryptedPrivateKeyInfo(parameters: parameters, encryptedData: Array(ciphertext))))
    }

    /// Decrypts an `EncryptedPrivateKeyInfo` DER. The iteration count is checked against `limits`
    /// before any derivation. Throws `malformedDER`, `unsupportedAlgorithm`, `costAboveCeiling` or
    /// `wrongPassphrase` (which also covers a modified ciphertext).
    public static func decrypt(
        _ der: some DataProtocol, passphrase: some DataProtocol, limits: KDFLimits = .default
    ) throws(KeyError) -> AsymmetricPrivateKey {
        let info = try decodeInfo(der)
        let parameters = info.parameters
        let hash: SecureCore.HashFunction
        switch parameters.prf {
        case OID.hmacWithSHA1: hash = SecureCore.HashFunction.Insecure.sha1
        case OID.hmacWithSHA256: hash = .sha256
        case OID.hmacWithSHA384: hash = .sha384
        case OID.hmacWithSHA512: hash = .sha512
        default: throw KeyError.unsupportedAlgorithm("PBKDF2 pseudo-random function \(parameters.prf)")
        }
        guard parameters.iterations <= limits.maxPBKDF2Rounds else {
            throw KeyError.costAboveCeiling("PBKDF2 iterations \(parameters.iterations) above ceiling \(limits.maxPBKDF2Rounds)")
        }
        let keyLength = PBES2Parameters.keyLength(of: parameters.cipher)!
        let aesKey: SecretBytes
        do {
            aesKey = try PasswordKDF.pbkdf2(hash: hash, rounds: UInt32(parameters.iterations))
                .deriveKey(from: passphrase, salt: parameters.salt, outputByteCount: keyLength, limits: limits)
        } catch {
            throw .kdf(error)
        }
        let plaintext: SecretBytes
        do {
            plaintext = SecretBytes(
                try AES._CBC.decrypt(info.encryptedData, using: aesKey.symmetricKey, iv: AES._CBC.IV(ivBytes: parameters.iv)))
        } catch {
            throw KeyError.wrongPassphrase
        }
        do {
            return try plaintext.withUnsafeBytes { try AsymmetricPrivateKey(pkcs8DERRepresentation: Array($0)) }
        } catch {
            // A wrong passphrase can still yield valid padding; the garbage inside does not parse.
            throw KeyError.wrongPassphrase
        }
    }

    private static func decodeInfo(_ der: some DataProtocol) throws(KeyError) -> EncryptedPrivateKeyInfo {
        do {
            return try EncryptedPrivateKeyInfo(derEncoded: Array(der))
        } catch let error as KeyError {
            throw error
        } catch {
            throw KeyError.malformedDER("EncryptedPrivateKeyInfo: \(ASN1ErrorText.clean(error))")
        }
    }
}
