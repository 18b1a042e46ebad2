import Crypto
import Foundation
import SecureCore
import CryptoExtras

/// LEGACY: wire compatibility with Heimdall (the iOS RSA library), so a service can talk to existing
/// apps. Never the default, and weaker than `HybridEncryption`: the payload has no integrity
/// protection beyond CBC padding, RSA-OAEP uses SHA-1, and 1024-bit keys are accepted.
///
/// Payload: `RSA-OAEP-SHA1(aesKey || iv)` (modulus bytes) `|| AES-CBC-PKCS7(aesKey, iv, message)`,
/// with a 32, 24 or 16-byte AES key chosen from `modulusBytes - 16 - 42` (≥ 32 → 32, ≥ 24 → 24,
/// else 16) and a 16-byte IV. Signatures: RSASSA-PKCS1-v1_5 with SHA-256. Text: padded base64, or
/// Heimdall's "URL-safe" variant (`/` → `_`, `+` → `-`, padding kept).
public enum Heimdall {
    /// Encrypts `message` to `key` in Heimdall's payload layout.
    /// Throws `KeyError.invalidKey` only if the key cannot wrap the AES key (not for accepted sizes),
    /// and `notApplicable` for a message over `maximumMessageByteCount` (which no reader would open).
    public static func encrypt(_ message: some DataProtocol, to key: RSAPublicKey) throws(KeyError) -> Data {
        guard message.count < maximumMessageByteCount else {
            throw .notApplicable("a Heimdall message is at most \(maximumMessageByteCount >> 20) MiB; use sf key encrypt without --heimdall or sf encrypt")
        }
        let keyLength = aesKeyLength(for: key)
        let keyAndIV = SecretBytes.random(count: keyLength + 16)
        let wrapped = try key.wrap(keyAndIV, padding: .legacySHA1)
        let body: Data
        do {
            body = try keyAndIV.withUnsafeBytes { bytes in
                try AES._CBC.encrypt(
                    message, using: SymmetricKey(data: bytes.prefix(keyLength)), iv: AES._CBC.IV(ivBytes: bytes.suffix(16)))
            }
        } catch {
            throw KeyError.invalidKey("AES-CBC refused the \(keyLength)-byte key")  // not reached: the sizes are fixed
        }
        return wrapped + body
    }

    /// Decrypts a Heimdall payload. Throws `legacyDecryptionFailed` when the payload is too short,
    /// the key does not unwrap, or the padding is wrong (the payload has no other integrity check).
    public static func decrypt(_ payload: some DataProtocol, with key: RSAPrivateKey) throws(KeyError) -> Data {
        guard payload.count <= key.publicKey.modulusByteCount + maximumMessageByteCount + 16 else { throw payloadTooLarge }
        let bytes = Data(payload)
        let modulusBytes = key.publicKey.modulusByteCount
        guard bytes.count >= modulusBytes + 16, (bytes.count - modulusBytes) % 16 == 0 else {
            throw KeyError.legacyDecryptionFailed("payload length does not fit the key")
        }
        let keyLength = aesKeyLength(for: key.publicKey)
        let keyAndIV: SecretBytes
        do {
            keyAndIV = try key.unwrap(bytes.prefix(modulusBytes), padding: .legacySHA1)
        } catch {
            throw KeyError.legacyDecryptionFailed("the wrapped key does not decrypt with this key")
        }
        guard keyAndIV.count == keyLength + 16 else { throw KeyError.legacyDecryptionFailed("the wrapped key has the wrong length") }
        do {
            return try keyAndIV.withUnsafeBytes { key in
                try AES._CBC.decrypt(
                    bytes.dropFirst(modulusBytes), using: SymmetricKey(data: key.prefix(keyLength)),
                    iv: AES._CBC.IV(ivBytes: key.suffix(16)))
            }
        } catch {
            throw KeyError.legacyDecryptionFailed("bad padding: wrong key or modified payload")
        }
    }

    /// Encrypts the UTF-8 bytes of `message` and returns Heimdall's base64 text.
    /// Throws as `encrypt(_:to:)`.
    public static func encrypt(_ message: String, to key: RSAPublicKey, urlEncode: Bool = false) throws(KeyError) -> String {
        encodeBase64(try encrypt(Data(message.utf8), to: key), urlSafe: urlEncode)
    }

    /// Decrypts Heimdall base64 text (either variant) to a UTF-8 string. Text whose length cannot
    /// encode a payload for this key is refused before it is decoded.
    /// Throws `KeyError.malformedBase64` or `legacyDecryptionFailed` (also for a non-UTF-8 plaintext).
    public static func decrypt(_ base64: String, with key: RSAPrivateKey) throws(KeyError) -> String {
        let plaintext = try decrypt(decodePayload(base64, for: key.publicKey), with: key)
        guard let text = String(data: plaintext, encoding: .utf8) else {
            throw KeyError.legacyDecryptionFailed("the plaintext is not UTF-8")
        }
        return text
    }

    /// RSASSA-PKCS1-v1_5 SHA-256 signature, as Heimdall's `sign`.
    /// Throws `KeyError.invalidKey` only if swift-crypto cannot sign with the key.
    public static func sign(_ message: some DataProtocol, with key: RSAPrivateKey) throws(KeyError) -> Data {
        try key.signature(for: message, scheme: .rsaPKCS1v15)
    }

    /// Signs the UTF-8 bytes of `message`; Heimdall base64 text.
    /// Throws as `sign(_:with:)`.
    public static func sign(_ message: String, with key: RSAPrivateKey, urlEncode: Bool = false) throws(KeyError) -> String {
        encodeBase64(try sign(Data(message.utf8), with: key), urlSafe: urlEncode)
    }

    /// True when `signature` is a valid RSASSA-PKCS1-v1_5 SHA-256 signature of `message`.
    public static func verify(_ signature: some DataProtocol, for message: some DataProtocol, with key: RSAPublicKey) -> Bool {
        (try? key.isValidSignature(signature, for: message, scheme: .rsaPKCS1v15)) == true
    }

    /// Verifies Heimdall base64 text (either variant) over the UTF-8 bytes of `message`. A text longer
    /// than any signature of this key is refused before it is decoded.
    public static func verify(base64 signature: String, for message: String, with key: RSAPublicKey) -> Bool {
        let limit = base64Length(ofByteCount: key.modulusByteCount)
        guard signature.utf8.count <= limit + maximumSurroundingWhitespace,
            let bytes = try? decodeBase64(signature), bytes.count == key.modulusByteCount
        else { return false }
        return verify(bytes, for: Data(message.utf8), with: key)
    }

    /// Heimdall's base64: padded standard base64, or with `/` → `_` and `+` → `-` (padding kept).
    public static func encodeBase64(_ bytes: some DataProtocol, urlSafe: Bool) -> String {
        let text = Base64.encode(bytes)
        return urlSafe ? text.replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "+", with: "-") : text
    }

    /// Decodes either variant of Heimdall's base64. Throws `malformedBase64`.
    public static func decodeBase64(_ text: String) throws(KeyError) -> Data {
        let standard = text.trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "_", with: "/").replacingOccurrences(of: "-", with: "+")
        guard let bytes = try? Base64.decode(standard) else { throw KeyError.malformedBase64 }
        return bytes
    }

    /// Decodes Heimdall base64 text of a payload for `key`, first checking from its length alone
    /// that the decoded bytes can be a payload (the wrapped key, then whole AES blocks), so a huge or
    /// misshapen text costs no decoding. Throws `legacyDecryptionFailed` or `malformedBase64`.
    public static func decodePayload(_ text: String, for key: RSAPublicKey) throws(KeyError) -> Data {
        let characters = text.utf8.count
        let minimum = base64Length(ofByteCount: key.modulusByteCount + 16)
        guard characters >= minimum else { throw KeyError.legacyDecryptionFailed("payload length does not fit the key") }
        try checkEncodedPayloadLength(characters, for: key)
        // Canonical padded base64 encodes whole 3-byte groups in 4 characters; beyond the trimmed
        // whitespace, a payload of n bytes is exactly base64Length(n) characters.
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines).utf8
        guard trimmed.count % 4 == 0 else { throw KeyError.malformedBase64 }
        let padding = trimmed.reversed().prefix(2).prefix { $0 == UInt8(ascii: "=") }.count
        let decodedCount = trimmed.count / 4 * 3 - padding
        guard decodedCount >= key.modulusByteCount + 16, (decodedCount - key.modulusByteCount) % 16 == 0 else {
            throw KeyError.legacyDecryptionFailed("payload length does not fit the key")
        }
        return try decodeBase64(text)
    }

    /// The largest message a Heimdall payload may carry: 64 MiB. Heimdall encrypts strings in memory
    /// on a phone; a larger payload is refused before it is decoded, so a huge input costs no
    /// allocation of several copies of its size.
    public static let maximumMessageByteCount = 64 << 20

    /// Refuses base64 text of `length` bytes that is longer than the encoding of the largest
    /// payload for `key` (with surrounding whitespace), so a caller holding raw input can refuse it
    /// before converting it to a string. Throws `legacyDecryptionFailed`.
    public static func checkEncodedPayloadLength(_ length: Int, for key: RSAPublicKey) throws(KeyError) {
        let maximum = base64Length(ofByteCount: key.modulusByteCount + maximumMessageByteCount + 16) + maximumSurroundingWhitespace
        guard length <= maximum else { throw payloadTooLarge }
    }

    private static var payloadTooLarge: KeyError {
        .legacyDecryptionFailed("the payload is larger than a Heimdall message may be (\(maximumMessageByteCount >> 20) MiB)")
    }

    /// Whitespace (a trailing newline, say) accepted around base64 text beyond its encoded length.
    static let maximumSurroundingWhitespace = 64

    /// The length of the padded base64 encoding of `count` bytes.
    static func base64Length(ofByteCount count: Int) -> Int { (count + 2) / 3 * 4 }

    /// The AES key length Heimdall derives from the modulus size.
    static func aesKeyLength(for key: RSAPublicKey) -> Int {
        let room = key.modulusByteCount - 16 - 42
        return room >= 32 ? 32 : room >= 24 ? 24 : 16
    }
}
