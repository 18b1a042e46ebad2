import Crypto
import Foundation

extension Noise {
    /// The DH functions of section 12 that swift-crypto provides: only Curve25519 (`25519`).
    public enum DHFunction: String, Sendable, Hashable, CaseIterable {
        /// X25519 (RFC 7748): DHLEN 32.
        case curve25519 = "25519"

        /// DHLEN: the length of a public key and of a DH output.
        public var dhLength: Int { 32 }

        /// DH(key_pair, public_key); `invalidPublicKey` when swift-crypto rejects the result (an
        /// all-zero output from a low-order point).
        func dh(_ privateKey: Curve25519.KeyAgreement.PrivateKey, _ publicKey: Curve25519.KeyAgreement.PublicKey)
            throws(NoiseError) -> SymmetricKey
        {
            do {
                return try privateKey.sharedSecretFromKeyAgreement(with: publicKey).withUnsafeBytes { SymmetricKey(data: $0) }
            } catch {
                throw .invalidPublicKey
            }
        }

        /// A public key from its DHLEN raw bytes.
        func publicKey(_ bytes: some DataProtocol) throws(NoiseError) -> Curve25519.KeyAgreement.PublicKey {
            do { return try Curve25519.KeyAgreement.PublicKey(rawRepresentation: Data(bytes)) } catch { throw .invalidPublicKey }
        }
    }
}
