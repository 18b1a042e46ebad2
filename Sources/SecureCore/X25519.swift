import Crypto
import Foundation

extension Curve25519.KeyAgreement.PrivateKey {
    /// X25519 with `publicKey`, or nil when the result is all zeros: `publicKey` is a low-order
    /// point (or its twist's), and the "shared" secret is then known to anyone, so the peer proved
    /// nothing (RFC 7748, section 6.1). swift-crypto returns that result unchecked (it ignores
    /// BoringSSL's return code, as CryptoKit does), so every X25519 here goes through this check.
    /// The result is checked in constant time.
    package func nonZeroSharedSecret(with publicKey: Curve25519.KeyAgreement.PublicKey) -> SharedSecret? {
        guard let shared = try? sharedSecretFromKeyAgreement(with: publicKey) else { return nil }
        return ConstantTime.isZero(shared) ? nil : shared
    }
}

extension Curve25519.KeyAgreement.PublicKey {
    /// Whether X25519 with this key gives all zeros whatever the private key: a point of order
    /// dividing 8 (every clamped scalar is a multiple of 8, and none is a multiple of a larger
    /// prime order), so one agreement with a throwaway key tells. For APIs that do the agreement
    /// themselves without checking it (swift-crypto's HPKE DHKEM, which RFC 9180 section 7.1.4
    /// requires to refuse the zero secret).
    package var isLowOrder: Bool { Curve25519.KeyAgreement.PrivateKey().nonZeroSharedSecret(with: self) == nil }
}

extension ConstantTime {
    /// True when every byte is zero. Only the length affects timing.
    public static func isZero(_ bytes: some ContiguousBytes) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var accumulated: UInt8 = 0
            for byte in buffer { accumulated |= byte }
            return accumulated == 0
        }
    }
}
