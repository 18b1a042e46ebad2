import Foundation

extension TestSupport {
    /// p = 2^255 − 19, as four little-endian 64-bit limbs.
    public static let ed25519Prime: [UInt64] = [0xffff_ffff_ffff_ffed, .max, .max, 0x7fff_ffff_ffff_ffff]

    /// The 32-byte Ed25519 point encoding (RFC 8032 §5.1.2) of `y`, given as four little-endian
    /// 64-bit limbs below 2^255 (not reduced, so non-canonical encodings can be written), with the
    /// sign bit of x set to `sign`.
    public static func ed25519Encoding(y: [UInt64], sign: UInt8 = 0) -> Data {
        var bytes = Data((0..<32).map { UInt8(truncatingIfNeeded: y[$0 / 8] >> (8 * ($0 % 8))) })
        bytes[31] |= sign << 7
        return bytes
    }

    /// The OpenSSH public key line `<label> <base64 of string "ssh-ed25519" || string point>`,
    /// written byte by byte (independently of the codec under test).
    public static func sshEd25519Line(_ point: Data, label: String = "ssh-ed25519") -> String {
        let field = { (bytes: Data) in Data([0, 0, 0, UInt8(bytes.count)]) + bytes }
        return "\(label) \((field(Data("ssh-ed25519".utf8)) + field(point)).base64EncodedString())"
    }
}
