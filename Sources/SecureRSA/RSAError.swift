/// Why an RSA operation of this module refused its input.
///
/// Decryption has a single failure case (`decryptionFailed`) whatever went wrong, so that an
/// attacker who submits ciphertexts learns nothing about the padding (Manger's attack).
public enum RSAError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The modulus or public exponent is outside what this module accepts (the reason says which).
    case invalidKey(String)
    /// The input to the public operation is not a number below the modulus, or has the wrong length.
    case inputOutOfRange
    /// The message is too long for OAEP with this key and hash.
    case messageTooLong(maximum: Int)
    /// An OAEP ciphertext did not decrypt: wrong length, wrong key, wrong label or bad padding.
    case decryptionFailed

    /// A sentence saying what is wrong.
    public var description: String {
        switch self {
        case .invalidKey(let reason): "invalid RSA key: \(reason)"
        case .inputOutOfRange: "the RSA input is not a number below the modulus"
        case .messageTooLong(let maximum): "the message is too long for RSA-OAEP with this key (at most \(maximum) bytes)"
        case .decryptionFailed: "RSA-OAEP decryption failed"
        }
    }
}
