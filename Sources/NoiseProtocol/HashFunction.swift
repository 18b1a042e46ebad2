import Crypto
import Foundation

extension Noise {
    /// The hash functions of section 13, with the HMAC and HKDF of section 4.3 built on them.
    public enum HashFunction: String, Sendable, Hashable, CaseIterable {
        /// SHA-256: HASHLEN 32, BLOCKLEN 64.
        case sha256 = "SHA256"
        /// SHA-512: HASHLEN 64, BLOCKLEN 128.
        case sha512 = "SHA512"

        /// HASHLEN: the digest length in bytes.
        public var hashLength: Int { self == .sha256 ? 32 : 64 }

        /// HASH(data).
        func hash(_ parts: [any DataProtocol]) -> Data {
            switch self {
            case .sha256: Self.hash(SHA256.self, parts)
            case .sha512: Self.hash(SHA512.self, parts)
            }
        }

        /// HMAC-HASH(key, data) as a key (zeroized by swift-crypto when released).
        func hmac(key: SymmetricKey, _ parts: [any DataProtocol]) -> SymmetricKey {
            switch self {
            case .sha256: Self.hmac(SHA256.self, key: key, parts)
            case .sha512: Self.hmac(SHA512.self, key: key, parts)
            }
        }

        /// HKDF(chaining_key, input_key_material, num_outputs) of section 4.3: two or three outputs
        /// of HASHLEN bytes each.
        func hkdf(chainingKey: SymmetricKey, inputKeyMaterial: some DataProtocol, outputs: Int) -> [SymmetricKey] {
            precondition(outputs == 2 || outputs == 3)
            let tempKey = hmac(key: chainingKey, [inputKeyMaterial])
            var result = [hmac(key: tempKey, [[UInt8(1)]])]
            for index in 2...outputs {
                result.append(result[index - 2].withUnsafeBytes { previous in
                    hmac(key: tempKey, [previous, [UInt8(index)]])
                })
            }
            return result
        }

        private static func hash<H: Crypto.HashFunction>(_: H.Type, _ parts: [any DataProtocol]) -> Data {
            var hasher = H()
            for part in parts { hasher.update(data: part) }
            return Data(hasher.finalize())
        }

        private static func hmac<H: Crypto.HashFunction>(_: H.Type, key: SymmetricKey, _ parts: [any DataProtocol])
            -> SymmetricKey
        {
            var mac = HMAC<H>(key: key)
            for part in parts { mac.update(data: part) }
            return mac.finalize().withUnsafeBytes { SymmetricKey(data: $0) }
        }
    }
}

extension SymmetricKey {
    /// The first 32 bytes, as a cipher key (section 5.2: a HASHLEN of 64 is truncated to 32).
    var truncatedToCipherKey: SymmetricKey {
        withUnsafeBytes { SymmetricKey(data: UnsafeRawBufferPointer(rebasing: $0.prefix(32))) }
    }
}
