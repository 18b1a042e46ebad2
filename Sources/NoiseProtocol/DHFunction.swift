import Crypto
import Foundation

extension Noise {
    /// The DH functions of section 12 that swift-crypto provides: only Curve25519 (`25519`).
    public enum DHFunction: String, Sendable, Hashable, CaseIterable {
        /// X25519 (RFC 7748): DHLEN 32.
        case curve25519 = "25519"

        /// DHLEN: the length of a public key and of a DH output.
        public var dhLength: Int { 32 }

        /// DH(key_pair, public_key); `invalidPublicKey` for an all-zero output, which a low-order
        /// point gives whatever the private key (section 12.1 lets an implementation signal an
        /// error for it). Without the check a peer could complete a handshake with such a static
        /// key, whose private key no one needs, and pass it off as its identity. swift-crypto does
        /// not check (it ignores BoringSSL's return code), so the output is checked here, in
        /// constant time. (This module depends on swift-crypto alone, so it does not share
        /// SecureCore's `nonZeroSharedSecret`.)
        func dh(_ privateKey: Curve25519.KeyAgreement.PrivateKey, _ publicKey: Curve25519.KeyAgreement.PublicKey)
            throws(NoiseError) -> SymmetricKey
        {
            guard let shared = try? privateKey.sharedSecretFromKeyAgreement(with: publicKey) else { throw .invalidPublicKey }
            let allZero = shared.withUnsafeBytes { $0.reduce(UInt8(0)) { $0 | $1 } == 0 }
            guard !allZero else { throw .invalidPublicKey }
            return shared.withUnsafeBytes { SymmetricKey(data: $0) }
        }

        /// A public key from its DHLEN raw bytes.
        func publicKey(_ bytes: some DataProtocol) throws(NoiseError) -> Curve25519.KeyAgreement.PublicKey {
            do { return try Curve25519.KeyAgreement.PublicKey(rawRepresentation: Data(bytes)) } catch { throw .invalidPublicKey }
        }
    }
}
