import Foundation

extension TestSupport {
    /// p = 2^255 − 19, as four little-endian 64-bit limbs.
    public static let ed25519Prime: [UInt64] = [0xffff_ffff_ffff_ffed, .max, .max, 0x7fff_ffff_ffff_ffff]

    /// The encodings of the eight Ed25519 points of small order that decode (the identity first,
    /// then the point of order 2, the two of order 4 and the four of order 8), as listed in
    /// "Taming the many EdDSAs" (Chalkias et al., 2020) and checked in Python (decode, double
    /// three times, reach the identity).
    public static let ed25519SmallOrderPoints: [Data] = [
        "0100000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    ].map { hex in Data(stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }) }

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
