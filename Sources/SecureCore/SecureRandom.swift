import Crypto
import Foundation

/// Cryptographically secure randomness from swift-crypto's generator. Lengths are exact, integers and strings are unbiased.
public enum SecureRandom {
    /// `count` random bytes. Any length is allowed, including lengths that are not a multiple of 4.
    public static func bytes(count: Int) -> Data {
        precondition(count >= 0, "count must not be negative")
        var data = Data(count: count)
        data.withUnsafeMutableBytes { fill($0) }
        return data
    }

    /// A uniformly distributed integer in `range` (rejection sampling, no modulo bias).
    public static func integer<T: FixedWidthInteger>(in range: ClosedRange<T>) -> T {
        var generator = SystemRandomNumberGenerator()
        return T.random(in: range, using: &generator)
    }

    /// A uniformly distributed integer in `range` (rejection sampling, no modulo bias).
    public static func integer<T: FixedWidthInteger>(in range: Range<T>) -> T {
        var generator = SystemRandomNumberGenerator()
        return T.random(in: range, using: &generator)
    }

    /// A string of `length` characters, each drawn uniformly and independently from `alphabet`.
    public static func string(length: Int, alphabet: Alphabet = .alphanumeric) -> String {
        precondition(length >= 0, "length must not be negative")
        let characters = alphabet.characters
        var generator = SystemRandomNumberGenerator()
        var result = ""
        result.reserveCapacity(length)
        for _ in 0..<length {
            result.append(characters[Int.random(in: 0..<characters.count, using: &generator)])
        }
        return result
    }

    /// The set of characters a random string is drawn from. Characters are distinct; order is irrelevant.
    public struct Alphabet: Sendable, Hashable {
        /// The distinct characters drawn from, each with equal probability.
        public let characters: [Character]

        /// An alphabet from the distinct characters of `characters`; throws when it has none.
        public init(_ characters: String) throws(SecureCoreError) {
            var seen = Set<Character>()
            let unique = characters.filter { seen.insert($0).inserted }
            guard !unique.isEmpty else { throw SecureCoreError.invalidParameter("alphabet is empty") }
            self.characters = Array(unique)
        }

        private init(uncheckedCharacters: String) { characters = Array(uncheckedCharacters) }

        /// `a`–`z`, `A`–`Z`, `0`–`9` (all 62, including `z` and `Z`).
        public static let alphanumeric = Alphabet(
            uncheckedCharacters: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        /// `a`–`z`.
        public static let lowercase = Alphabet(uncheckedCharacters: "abcdefghijklmnopqrstuvwxyz")
        /// `0`–`9`.
        public static let digits = Alphabet(uncheckedCharacters: "0123456789")
        /// `0`–`9`, `a`–`f`.
        public static let hex = Alphabet(uncheckedCharacters: "0123456789abcdef")
        /// The 64 characters of base64url.
        public static let base64url = Alphabet(
            uncheckedCharacters: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    }

    /// Fills `buffer` with random bytes through swift-crypto's key generation, which draws from the
    /// operating system's CSPRNG (`getrandom(2)` on Linux, the system generator on Apple platforms).
    static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var offset = 0
        while offset < buffer.count {
            let n = min(buffer.count - offset, 4096)
            SymmetricKey(size: SymmetricKeySize(bitCount: n * 8)).withUnsafeBytes { random in
                UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<offset + n]).copyMemory(from: random)
            }
            offset += n
        }
    }
}
