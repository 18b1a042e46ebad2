import Crypto
import Foundation
import SecureCore
import SwiftASN1
import CryptoExtras
import SecureRSA

/// RSA key sizes this module accepts. 2048, 3072 and 4096 bits are accepted everywhere; 1024 bits only
/// by the legacy Heimdall operations (`Heimdall`), for talking to existing apps.
public enum RSAKeySize: Int, Sendable, CaseIterable, CustomStringConvertible {
    /// 1024 bits: legacy Heimdall interoperability only.
    case legacy1024 = 1024
    /// 2048, 3072 and 4096 bits.
    case bits2048 = 2048
    case bits3072 = 3072
    case bits4096 = 4096

    /// True for sizes the native (non-legacy) operations accept.
    public var isModern: Bool { self != .legacy1024 }

    /// A short human-readable name; never contains key material.

    /// The key size's name, for example `RSA-3072`.
    public var description: String { "RSA-\(rawValue)" }
}

/// An RSA public key (modulus and public exponent). Used for RSA-PSS/PKCS#1 v1.5 verification and
/// RSA-OAEP encryption; its encodings are PKCS#1 `RSAPublicKey` and X.509 SubjectPublicKeyInfo.
public struct RSAPublicKey: Sendable {
    let backing: _RSA.Signing.PublicKey
    private let encryption: SharedKey<_RSA.Encryption.PublicKey>
    /// The raw public operation, for PSS verification with any salt length (swift-crypto's fixes it).
    let publicOperation: RSAPublicOperation
    /// The size of the modulus.
    public let keySize: RSAKeySize

    /// Builds a key from a PKCS#1 `RSAPublicKey` DER encoding. Throws `malformedDER` or `unsupportedKeySize`.
    public init(pkcs1DERRepresentation der: some DataProtocol) throws(KeyError) {
        let structure = try DER.decode(RSAPublicKeyStructure.self, from: der, what: "PKCS#1 RSA public key")
        try self.init(structure: structure)
    }

    /// Builds a key from its modulus and public exponent (unsigned big-endian bytes), as Heimdall's
    /// `publicKeyComponents` gives them. Throws `unsupportedKeySize` or `invalidKey`.
    public init(modulus: some DataProtocol, exponent: some DataProtocol) throws(KeyError) {
        let strip = { (bytes: [UInt8]) in bytes.drop(while: { $0 == 0 }) }
        try self.init(structure: RSAPublicKeyStructure(modulus: strip(Array(modulus)), publicExponent: strip(Array(exponent))))
    }

    private init(structure: RSAPublicKeyStructure) throws(KeyError) {
        guard let size = RSAKeySize(rawValue: structure.modulus.count * 8), structure.modulus.first.map({ $0 >= 0x80 }) == true
        else {
            throw KeyError.unsupportedKeySize(bitCount(structure.modulus))
        }
        guard structure.publicExponent.count <= 4, structure.publicExponent.last.map({ $0 & 1 == 1 }) == true,
            structure.publicExponent != [1]
        else {
            throw KeyError.invalidKey("RSA public exponent must be an odd number above 1 of at most 32 bits")
        }
        // Every member is made before any is assigned: a throw never leaves a partly initialized key.
        let der = DER.encoded(structure)
        guard let signing = try? _RSA.Signing.PublicKey(unsafeDERRepresentation: der),
            let encrypting = try? _RSA.Encryption.PublicKey(unsafeDERRepresentation: der),
            let operation = try? RSAPublicOperation(modulus: structure.modulus, exponent: structure.publicExponent)
        else {
            throw KeyError.invalidKey("RSA public key rejected by swift-crypto (modulus not odd, or exponent out of range)")
        }
        backing = signing
        encryption = SharedKey(encrypting)
        publicOperation = operation
        keySize = size
    }

    init(backing: _RSA.Signing.PublicKey) throws(KeyError) {
        try self.init(pkcs1DERRepresentation: backing.pkcs1DERRepresentation)
    }

    /// The modulus and public exponent as unsigned big-endian bytes without leading zeros.
    public var components: (modulus: Data, exponent: Data) {
        let structure = try! RSAPublicKeyStructure(derEncoded: Array(backing.pkcs1DERRepresentation))
        return (Data(structure.modulus), Data(structure.publicExponent))
    }

    /// The PKCS#1 `RSAPublicKey` DER encoding.
    public var pkcs1DERRepresentation: Data { backing.pkcs1DERRepresentation }

    /// The number of bytes in the modulus (and in every signature and OAEP ciphertext).
    public var modulusByteCount: Int { keySize.rawValue / 8 }

    /// The same key material as an encryption key (swift-crypto keeps the two uses apart).
    var encryptionKey: _RSA.Encryption.PublicKey { encryption.key }
}

/// An RSA private key (two-prime). Encodings: PKCS#1 `RSAPrivateKey` and PKCS#8.
public struct RSAPrivateKey: Sendable {
    let backing: _RSA.Signing.PrivateKey
    private let decryption: SharedKey<_RSA.Encryption.PrivateKey>
    /// The matching public key.
    public let publicKey: RSAPublicKey

    /// Generates a new key with public exponent 65537. RSA generation takes seconds for 4096 bits.
    /// Throws `KeyError.unsupportedKeySize` when swift-crypto refuses the size.
    public init(keySize: RSAKeySize) throws(KeyError) {
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: keySize.rawValue))
        } catch {
            throw KeyError.unsupportedKeySize(keySize.rawValue)
        }
        try self.init(backing: key)
    }

    /// Builds a key from a PKCS#1 `RSAPrivateKey` DER encoding. Throws `malformedDER`,
    /// `unsupportedKeySize` or `invalidKey` (inconsistent numbers).
    public init(pkcs1DERRepresentation der: some DataProtocol) throws(KeyError) {
        let structure = try DER.decode(RSAPrivateKeyStructure.self, from: der, what: "PKCS#1 RSA private key")
        try self.init(structure: structure)
    }

    init(structure: RSAPrivateKeyStructure) throws(KeyError) {
        guard RSAKeySize(rawValue: structure.modulus.count * 8) != nil, structure.modulus.first.map({ $0 >= 0x80 }) == true else {
            throw KeyError.unsupportedKeySize(bitCount(structure.modulus))
        }
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(unsafeDERRepresentation: DER.encoded(structure))
        } catch {
            throw KeyError.invalidKey("the RSA private key's numbers are inconsistent (n is not p·q, or d, dp, dq or qinv does not match; BoringSSL's key check failed)")
        }
        try self.init(backing: key)
    }

    /// Builds a key from its modulus, public exponent and private exponent only (unsigned
    /// big-endian bytes), recovering the primes p and q (RFC 8017 / NIST SP 800-56B appendix C,
    /// done by swift-crypto's `_RSA.Signing.PrivateKey._createFromNumbers`). This is what an RSA
    /// private JWK without its optional CRT members (RFC 7518 §6.3.2) describes. Throws
    /// `unsupportedKeySize`, or `invalidKey` when the numbers do not form a key.
    public init(modulus: some DataProtocol, publicExponent: some DataProtocol, privateExponent: some DataProtocol) throws(KeyError) {
        let n = Data(Array(modulus).drop(while: { $0 == 0 }))
        let e = Data(Array(publicExponent).drop(while: { $0 == 0 }))
        let d = Data(Array(privateExponent).drop(while: { $0 == 0 }))
        guard RSAKeySize(rawValue: n.count * 8) != nil, n.first.map({ $0 >= 0x80 }) == true else {
            throw KeyError.unsupportedKeySize(bitCount(ArraySlice(n)))
        }
        guard e.count <= 4, e.last.map({ $0 & 1 == 1 }) == true, e != Data([1]), !d.isEmpty, d.count <= n.count else {
            throw KeyError.invalidKey("RSA exponents out of range")
        }
        // swift-crypto's recovery of p and q never ends for a prime or prime-power modulus with a
        // d chosen to match (every try gives ±1, and such tries are not counted).
        guard RSAModulusCheck.recoveryIsBounded(publicExponent: e, privateExponent: d) else {
            throw KeyError.invalidKey("the RSA numbers n, e and d do not form a key (e·d − 1 has more factors of 2 than any key's)")
        }
        guard RSAModulusCheck.canBeProductOfDistinctPrimes(n) else {
            throw KeyError.invalidKey("the RSA modulus n is not a product of distinct odd primes")
        }
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey._createFromNumbers(n: n, e: e, d: d)
        } catch {
            throw KeyError.invalidKey("the RSA numbers n, e and d do not form a key (p and q not recoverable)")
        }
        try self.init(backing: key)
    }

    init(backing: _RSA.Signing.PrivateKey) throws(KeyError) {
        self.backing = backing
        do {
            decryption = SharedKey(try _RSA.Encryption.PrivateKey(unsafeDERRepresentation: backing.derRepresentation))
        } catch {
            throw KeyError.invalidKey("RSA private key rejected for decryption")
        }
        publicKey = try RSAPublicKey(backing: backing.publicKey)
    }

    /// The PKCS#1 `RSAPrivateKey` DER encoding (secret).
    public var pkcs1DERRepresentation: SecretBytes { SecretBytes(backing.derRepresentation) }

    /// The key's numbers, for JWK export.
    var structure: RSAPrivateKeyStructure {
        try! RSAPrivateKeyStructure(derEncoded: Array(backing.derRepresentation))
    }

    /// The same key material as a decryption key (swift-crypto keeps the two uses apart).
    var decryptionKey: _RSA.Encryption.PrivateKey { decryption.key }
}

/// swift-crypto's RSA encryption keys are not marked `Sendable`, but they are immutable after
/// creation and BoringSSL's RSA operations may run concurrently on one key, so one parsed copy is
/// shared instead of re-parsing the DER for every operation.
private final class SharedKey<Key>: @unchecked Sendable {
    let key: Key
    init(_ key: Key) { self.key = key }
}

private func bitCount(_ bytes: ArraySlice<UInt8>) -> Int {
    let significant = bytes.drop(while: { $0 == 0 })
    guard let first = significant.first else { return 0 }
    return significant.count * 8 - first.leadingZeroBitCount
}
