import Foundation

extension TestSupport {
    /// X25519 public keys for which every private key gives the all-zero shared secret: 0 and 1,
    /// the two points of order 8, p − 1, p and p + 1, and three of them with bit 255 set (which
    /// X25519 ignores). Each was checked against Python `cryptography` (OpenSSL refuses all of
    /// them as giving an all-zero secret).
    public static let lowOrderX25519Points: [Data] = [
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b880",
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f11d7",
        "0000000000000000000000000000000000000000000000000000000000000080",
    ].map { Data(hexString: $0) }
}
