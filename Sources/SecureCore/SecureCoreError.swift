/// Every failure SecureCore reports. Each case names one cause so callers (and the `sf` tool) can
/// react precisely; `description` is a sentence a person can act on and never contains secret data.
public enum SecureCoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The key, passphrase or context is wrong, or the data was modified. AEAD cannot tell these apart.
    case authenticationFailed
    /// The input ends before a complete structure (header, nonce, tag, or final chunk) was read.
    case truncated
    /// Bytes follow the end of a complete structure.
    case trailingData
    /// The input does not start with a known magic value, so it is not data in the expected format.
    case unrecognizedFormat(expected: String)
    /// The format is known but this version or algorithm identifier is not supported.
    case unsupportedAlgorithm(UInt8)
    /// The key-derivation identifier is not supported.
    case unsupportedKDF(UInt8)
    /// A cost parameter read from untrusted input exceeds the configured ceiling; no work was done.
    case costAboveCeiling(String)
    /// A parameter is outside its valid range (key length, scrypt r = 0, empty alphabet, ...).
    case invalidParameter(String)
    /// Text that should be hex, base64, PEM or a plist is not well formed.
    case malformedEncoding(String)
    /// The sealing capability (for example a locked vault) cannot currently seal or open data.
    case locked
    /// A file-system operation failed.
    case io(path: String, reason: String)
    /// The destination exists and the operation was asked not to replace it.
    case fileExists(path: String)
    /// Memory for the operation could not be allocated (for example scrypt's 128·r·N bytes).
    case outOfMemory(String)
    /// The input is longer than the operation reads into memory (`limit` bytes); nothing of it was used.
    case inputTooLarge(path: String, limit: Int)
    /// The data is sealed with the other kind of secret: a passphrase where a raw key was given, or
    /// the reverse. Like `authenticationFailed`, the secret given does not open it.
    case secretKindMismatch(sealedWith: SecretKind)
    /// An `ItemSealer` failed for a reason of its own other than `locked` (for example a hardware
    /// key that is unplugged). SecureCore cannot name the sealer's error type, so this carries the
    /// sealer's error itself (`SealerFailure.underlying`), to be cast back to that type.
    case sealerFailed(SealerFailure)

    /// What sealed a value: a raw key or a passphrase (see `secretKindMismatch`).
    public enum SecretKind: Sendable, Equatable {
        /// A 32-byte raw key.
        case rawKey
        /// A passphrase, through the KDF named in the header.
        case passphrase
    }

    /// What went wrong, in words for a user; never a secret or an internal detail.
    public var description: String {
        switch self {
        case .authenticationFailed:
            return "authentication failed: wrong key, passphrase or context, or the data was modified"
        case .truncated:
            return "data is truncated"
        case .trailingData:
            return "unexpected data after the end of the sealed content"
        case .unrecognizedFormat(let expected):
            return "not \(expected) data (unrecognized magic bytes)"
        case .unsupportedAlgorithm(let id):
            return "unsupported algorithm identifier 0x\(String(id, radix: 16))"
        case .unsupportedKDF(let id):
            return "unsupported key derivation identifier 0x\(String(id, radix: 16))"
        case .costAboveCeiling(let detail):
            return "key derivation cost above ceiling: \(detail)"
        case .invalidParameter(let detail):
            return "invalid parameter: \(detail)"
        case .malformedEncoding(let detail):
            return "malformed encoding: \(detail)"
        case .locked:
            return "the vault is locked"
        case .io(let path, let reason):
            return "\(path): \(reason)"
        case .fileExists(let path):
            return "\(path) already exists"
        case .outOfMemory(let detail):
            return "out of memory: \(detail)"
        case .inputTooLarge(let path, let limit):
            let size = limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit) bytes"
            return "\(path): input too large (over \(size))"
        case .secretKindMismatch(.passphrase):
            return "this data is sealed with a passphrase, not a raw key"
        case .secretKindMismatch(.rawKey):
            return "this data is sealed with a raw key, not a passphrase"
        case .sealerFailed(let failure):
            return failure.description
        }
    }
}

/// An `ItemSealer`'s own error, kept as the value it threw (`SecureCoreError.sealerFailed`), so
/// the caller that knows the sealer can decide on it: `failure.underlying as? MySealerError`.
public struct SealerFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The error the sealer threw.
    public let underlying: any Error & Sendable

    /// Wraps the sealer's error `underlying`.
    public init(_ underlying: any Error & Sendable) {
        self.underlying = underlying
    }

    /// The sealer's own description of its error.
    public var description: String { String(describing: underlying) }

    /// Errors in general are not `Equatable`: two failures are equal when their errors are of one
    /// type and describe themselves alike.
    public static func == (lhs: SealerFailure, rhs: SealerFailure) -> Bool {
        type(of: lhs.underlying) == type(of: rhs.underlying) && lhs.description == rhs.description
    }
}
