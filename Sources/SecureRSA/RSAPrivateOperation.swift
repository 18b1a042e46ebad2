import Crypto
import CryptoExtras
import Foundation
import SecureCore

/// The RSA private operation `x = c^d mod n` (RFC 8017 RSADP) on a key held by BoringSSL.
///
/// swift-crypto exposes no raw decryption, but RFC 9474's blind signing is exactly this operation:
/// `_RSA.BlindSigning.PrivateKey.blindSignature(for:)` calls BoringSSL's `RSA_sign_raw` with
/// `RSA_NO_PADDING` (blinded, constant-time CRT with a fault check), after checking only that the
/// input is k bytes and below n, and then checks `x^e = c`. No padding or message check is applied,
/// so it is RSADP as RFC 8017 §5.1.2 defines it.
public struct RSAPrivateOperation: Sendable {
    // The blind-signing parameters choose a hash and salt for RFC 9474's own padding, which
    // `blindSignature(for:)` does not use.
    private let key: _RSA.BlindSigning.PrivateKey<SHA384>
    /// The matching public operation.
    public let publicOperation: RSAPublicOperation

    /// A key from its numbers (unsigned big-endian bytes), as an OpenSSH `ssh-rsa` private key holds
    /// them; BoringSSL derives the CRT values and checks the key. Throws `RSAError.invalidKey` when
    /// the numbers do not form a key of at least 2048 bits.
    public init(n: some DataProtocol, e: some DataProtocol, d: some DataProtocol, p: some DataProtocol, q: some DataProtocol) throws(RSAError) {
        let publicOperation = try RSAPublicOperation(modulus: n, exponent: e)
        guard let key = try? _RSA.BlindSigning.PrivateKey(
            n: Data(n), e: Data(e), d: Data(d), p: Data(p), q: Data(q), parameters: .RSABSSA_SHA384_PSS_Deterministic)
        else {
            throw .invalidKey("the numbers n, e, d, p and q do not form an RSA key of at least 2048 bits")
        }
        self.key = key
        self.publicOperation = publicOperation
    }

    /// A key from its PKCS#1 `RSAPrivateKey` (or PKCS#8) DER encoding, with its public numbers.
    /// Throws `RSAError.invalidKey` when BoringSSL refuses it (below 1024 bits among others).
    public init(der: some DataProtocol, modulus: some DataProtocol, exponent: some DataProtocol) throws(RSAError) {
        let publicOperation = try RSAPublicOperation(modulus: modulus, exponent: exponent)
        guard let key = try? _RSA.BlindSigning.PrivateKey(unsafeDERRepresentation: Data(der), parameters: .RSABSSA_SHA384_PSS_Deterministic)
        else {
            throw .invalidKey("BoringSSL refused the RSA private key")
        }
        self.key = key
        self.publicOperation = publicOperation
    }

    /// `input^d mod n` for an input of exactly k bytes below n, returned as k secret bytes. Throws
    /// `RSAError.inputOutOfRange` for any other input (a public property of the input).
    package func apply(_ input: some DataProtocol) throws(RSAError) -> SecretBytes {
        guard input.count == publicOperation.modulusByteCount else { throw .inputOutOfRange }
        let result: _RSA.BlindSigning.BlindSignature
        do {
            result = try key.blindSignature(for: Array(input))
        } catch {
            throw .inputOutOfRange
        }
        return result.withUnsafeBytes { bytes in
            defer { Zeroization.zero(UnsafeMutableRawBufferPointer(mutating: bytes)) }
            return SecretBytes(bytes)
        }
    }
}
