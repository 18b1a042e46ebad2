extension Noise {
    /// A Noise protocol name (section 8): `Noise_PATTERN_DH_CIPHER_HASH`, for example
    /// `Noise_XX_25519_ChaChaPoly_SHA256`. Every value names a protocol this implementation runs.
    public struct ProtocolName: Sendable, Hashable, CustomStringConvertible, LosslessStringConvertible {
        /// The handshake pattern with its modifiers.
        public let pattern: HandshakePattern
        /// The DH function.
        public let dh: DHFunction
        /// The cipher function.
        public let cipher: CipherFunction
        /// The hash function.
        public let hash: HashFunction

        /// A protocol from its parts.
        public init(pattern: HandshakePattern, dh: DHFunction = .curve25519, cipher: CipherFunction, hash: HashFunction) {
            self.pattern = pattern
            self.dh = dh
            self.cipher = cipher
            self.hash = hash
        }

        /// Parses and validates `name`. Errors, checked in this order: `malformedProtocolName` (not
        /// five `_`-separated parts starting with `Noise`), `unsupportedPattern` / `invalidModifier`
        /// / `invalidPattern`, `unsupportedDH` (`448`), `unsupportedCipher`, `unsupportedHash`
        /// (`BLAKE2b`, `BLAKE2s`).
        public init(parsing name: String) throws(NoiseError) {
            let parts = name.split(separator: "_", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 5, parts[0] == "Noise", parts.dropFirst().allSatisfy({ !$0.isEmpty }) else {
                throw .malformedProtocolName(name)
            }
            let pattern = try HandshakePattern(named: parts[1])
            guard let dh = DHFunction(rawValue: parts[2]) else { throw .unsupportedDH(parts[2]) }
            guard let cipher = CipherFunction(rawValue: parts[3]) else { throw .unsupportedCipher(parts[3]) }
            guard let hash = HashFunction(rawValue: parts[4]) else { throw .unsupportedHash(parts[4]) }
            self.init(pattern: pattern, dh: dh, cipher: cipher, hash: hash)
        }

        /// Parses `description`; nil when it is not a supported protocol name.
        public init?(_ description: String) {
            guard let name = try? ProtocolName(parsing: description) else { return nil }
            self = name
        }

        /// The protocol name, as hashed into the handshake.
        public var description: String { "Noise_\(pattern.name)_\(dh.rawValue)_\(cipher.rawValue)_\(hash.rawValue)" }
    }
}
