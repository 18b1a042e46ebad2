import BigInt
import Foundation

/// The RSA public operation `m = x^e mod n` (RFC 8017 RSAEP and RSAVP1) on a public key.
///
/// Done with BigInt, which is not constant time. For verification every value is public (the key
/// and the signature); for OAEP encryption the input is the encoded message, which carries the
/// masked plaintext, so its timing is not guaranteed independent of it (docs/SECURITY.md).
/// Private-key operations never come here: they stay in BoringSSL (`RSAPrivateOperation`).
public struct RSAPublicOperation: Sendable {
    /// Moduli above this many bits are refused: the cost of the operation grows with the square of
    /// the size, and no deployed key is larger.
    public static let maximumModulusBits = 16384

    private let modulus: BigUInt
    private let exponent: BigUInt
    /// The length in bytes of the modulus, and of every input and output: k in RFC 8017.
    public let modulusByteCount: Int
    /// The bit length of the modulus (modBits in RFC 8017).
    public let modulusBitCount: Int
    /// The bit length of the public exponent (2 to 64), for callers with a lower ceiling: the
    /// private side (BoringSSL) refuses exponents over 33 bits, and x/crypto/ssh over 24.
    public let exponentBitCount: Int

    /// A public key from its modulus and exponent as unsigned big-endian bytes (leading zeros
    /// allowed). Throws `RSAError.invalidKey` unless the modulus is odd, of 512 to 16384 bits, and the
    /// exponent odd, above 1, below the modulus and of at most 64 bits.
    public init(modulus n: some DataProtocol, exponent e: some DataProtocol) throws(RSAError) {
        let modulus = BigUInt(Data(n)), exponent = BigUInt(Data(e))
        guard (512...Self.maximumModulusBits).contains(modulus.bitWidth), modulus[bitAt: 0] else {
            throw .invalidKey("the modulus must be odd and of 512 to \(Self.maximumModulusBits) bits")
        }
        guard exponent > 1, exponent[bitAt: 0], exponent.bitWidth <= 64, exponent < modulus else {
            throw .invalidKey("the public exponent must be odd, above 1 and of at most 64 bits")
        }
        self.modulus = modulus
        self.exponent = exponent
        modulusBitCount = modulus.bitWidth
        exponentBitCount = exponent.bitWidth
        modulusByteCount = (modulus.bitWidth + 7) / 8
    }

    /// `input^e mod n` for an input of exactly `modulusByteCount` bytes, returned in as many bytes.
    /// Throws `RSAError.inputOutOfRange` when the input has another length or is not below n
    /// (RFC 8017 §5.1.1 and §5.2.2 step 1).
    public func apply(_ input: some DataProtocol) throws(RSAError) -> [UInt8] {
        guard input.count == modulusByteCount else { throw .inputOutOfRange }
        let base = BigUInt(Data(input))
        guard base < modulus else { throw .inputOutOfRange }
        // Left-to-right square-and-multiply over the exponent's bits only (BigUInt's own
        // power(_:modulus:) squares through every bit of every word: 64 squarings for e = 65537
        // instead of 16).
        var result = base
        for bit in stride(from: exponent.bitWidth - 2, through: 0, by: -1) {
            result = (result * result) % modulus
            if exponent[bitAt: bit] { result = (result * base) % modulus }
        }
        return Self.bytes(of: result, count: modulusByteCount)
    }

    /// I2OSP: `value` as exactly `count` big-endian bytes (the value is below the modulus, so it fits).
    private static func bytes(of value: BigUInt, count: Int) -> [UInt8] {
        let serialized = value.serialize()
        return [UInt8](repeating: 0, count: count - serialized.count) + serialized
    }
}
