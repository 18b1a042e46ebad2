/// Bech32 (BIP 173) as age uses it: no length limit on the data part, all-lowercase or all-uppercase
/// strings, and the checksum computed over the lowercase form.
enum Bech32 {
    private static let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    private static let reverse: [Int8] = {
        var table = [Int8](repeating: -1, count: 128)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = Int8(i) }
        return table
    }()

    /// The Bech32 string of `data` under `hrp`; uppercase output when `uppercase` is set.
    static func encode(hrp: String, data: some Collection<UInt8>, uppercase: Bool = false) -> String {
        let lowerHRP = Array(hrp.lowercased().utf8)
        let values = regroup(Array(data), from: 8, to: 5, pad: true)!
        let checksum = checksum(hrp: lowerHRP, values: values)
        var out = lowerHRP + [UInt8(ascii: "1")]
        out += (values + checksum).map { alphabet[Int($0)] }
        let text = String(decoding: out, as: UTF8.self)
        return uppercase ? text.uppercased() : text
    }

    /// Decodes `text` into its human-readable part (in the case it was written: age compares it
    /// exactly, so `AGE1…` is no recipient and `age-secret-key-1…` no identity) and data bytes. Nil
    /// for mixed case, characters outside the alphabet, a bad checksum, or non-zero padding bits.
    static func decode(_ text: String) -> (hrp: String, data: [UInt8])? {
        let bytes = Array(text.utf8)
        guard bytes.allSatisfy({ (33...126).contains($0) }) else { return nil }
        let hasLower = bytes.contains { (97...122).contains($0) }
        let hasUpper = bytes.contains { (65...90).contains($0) }
        guard !(hasLower && hasUpper) else { return nil }
        let lower = bytes.map { (65...90).contains($0) ? $0 + 32 : $0 }
        guard let separator = lower.lastIndex(of: UInt8(ascii: "1")), separator >= 1,
            lower.count - separator - 1 >= 6
        else { return nil }
        let hrp = Array(lower[..<separator])
        var values = [UInt8]()
        values.reserveCapacity(lower.count - separator - 1)
        for c in lower[(separator + 1)...] {
            let v = reverse[Int(c)]
            guard v >= 0 else { return nil }
            values.append(UInt8(v))
        }
        guard polymod(expand(hrp) + values) == 1 else { return nil }
        guard let data = regroup(Array(values.dropLast(6)), from: 5, to: 8, pad: false) else { return nil }
        return (String(decoding: bytes[..<separator], as: UTF8.self), data)
    }

    private static func expand(_ hrp: [UInt8]) -> [UInt8] {
        hrp.map { $0 >> 5 } + [0] + hrp.map { $0 & 31 }
    }

    private static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]
        var chk: UInt32 = 1
        for v in values {
            let top = chk >> 25
            chk = (chk & 0x1ff_ffff) << 5 ^ UInt32(v)
            for i in 0..<5 where (top >> i) & 1 == 1 { chk ^= generator[i] }
        }
        return chk
    }

    private static func checksum(hrp: [UInt8], values: [UInt8]) -> [UInt8] {
        let mod = polymod(expand(hrp) + values + [0, 0, 0, 0, 0, 0]) ^ 1
        return (0..<6).map { UInt8((mod >> (5 * (5 - $0))) & 31) }
    }

    /// Regroups bits; without padding, leftover bits must be fewer than `from` and all zero.
    private static func regroup(_ input: [UInt8], from: Int, to: Int, pad: Bool) -> [UInt8]? {
        var accumulator = 0, bits = 0
        var out = [UInt8]()
        let mask = (1 << to) - 1
        for value in input {
            accumulator = (accumulator << from) | Int(value)
            bits += from
            while bits >= to {
                bits -= to
                out.append(UInt8((accumulator >> bits) & mask))
            }
            accumulator &= (1 << bits) - 1
        }
        if pad {
            if bits > 0 { out.append(UInt8((accumulator << (to - bits)) & mask)) }
        } else if bits >= from || (accumulator << (to - bits)) & mask != 0 {
            return nil
        }
        return out
    }
}
