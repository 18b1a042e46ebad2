import Crypto
import Foundation

/// An SSH public key: the key fields of its wire encoding (the blob of an `authorized_keys` line;
/// RFC 4253 §6.6, RFC 5656 §3.1, RFC 8709 §4), and the text line `<type> <base64 blob> [comment]`.
/// The one SSH public key codec, shared by SecureKeys (OpenSSH import, export and fingerprints) and
/// AgeEncryption (`ssh-ed25519` recipients).
///
/// A value always holds a well-formed key: an `ssh-ed25519` key is a valid RFC 8032 point encoding
/// (canonical y, on the curve, no x = 0 with the sign bit set), an ECDSA point is an uncompressed
/// point on its curve (checked by swift-crypto); RSA numbers are only required to be non-negative
/// (size and exponent rules are the caller's).
///
/// The key type is always the one inside the blob, as in Go's `x/crypto/ssh` `ParseAuthorizedKey`
/// (which age uses). The line's first field is kept as `label`: OpenSSH (`ssh-keygen`, `sshd`)
/// refuses a line whose label differs from the blob's type, age ignores the label; callers choose.
public struct SSHPublicKey: Sendable, Equatable {
    /// The curves of the `ecdsa-sha2-<curve>` key types (RFC 5656 §6.1).
    public enum ECDSACurve: String, Sendable, Equatable, CaseIterable {
        /// NIST P-256 (`ecdsa-sha2-nistp256`).
        case nistp256
        /// NIST P-384 (`ecdsa-sha2-nistp384`).
        case nistp384
        /// NIST P-521 (`ecdsa-sha2-nistp521`).
        case nistp521
    }

    /// The key fields of the supported key types.
    public enum Key: Sendable, Equatable {
        /// `ssh-ed25519`: the 32-byte RFC 8032 encoding of the public point.
        case ed25519(Data)
        /// `ssh-rsa`: the public exponent e and the modulus n, unsigned big-endian without leading zeros.
        case rsa(exponent: Data, modulus: Data)
        /// `ecdsa-sha2-<curve>`: the uncompressed SEC1 (X9.63) point `04 || X || Y`.
        case ecdsa(curve: ECDSACurve, point: Data)

        /// The SSH key type name: `ssh-ed25519`, `ssh-rsa` or `ecdsa-sha2-<curve>`.
        public var keyType: String {
            switch self {
            case .ed25519: "ssh-ed25519"
            case .rsa: "ssh-rsa"
            case .ecdsa(let curve, _): "ecdsa-sha2-\(curve.rawValue)"
            }
        }
    }

    /// The key fields.
    public let key: Key
    /// The line's first field when the key was parsed from a line (nil otherwise). It may differ
    /// from `keyType`; see the type's discussion.
    public let label: String?
    /// The comment after the base64 blob (nil when there is none), with surrounding blanks removed.
    public let comment: String?

    /// The key type named inside the blob (`ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`, …).
    public var keyType: String { key.keyType }

    /// The wire encoding of the key (`string` type, then the type's fields; mpints minimal), as
    /// OpenSSH and `x/crypto/ssh` re-encode it: what the OpenSSH fingerprint and age's key tag hash.
    public var blob: Data {
        var writer = SSHWireWriter()
        writer.string(keyType)
        switch key {
        case .ed25519(let point):
            writer.string(point)
        case .rsa(let exponent, let modulus):
            writer.unsignedMPInt(exponent)
            writer.unsignedMPInt(modulus)
        case .ecdsa(let curve, let point):
            writer.string(curve.rawValue)
            writer.string(point)
        }
        return writer.bytes
    }

    /// The `authorized_keys` line: `<keyType> <base64 blob>`, then ` <comment>` when there is one.
    public var line: String {
        let line = "\(keyType) \(Base64.encode(blob))"
        return comment.map { "\(line) \($0)" } ?? line
    }

    /// A key from its fields, checked as a parsed key would be (so `line` and `blob` parse back to
    /// the same key). Throws `SSHPublicKeyError`.
    public init(_ key: Key, comment: String? = nil) throws(SSHPublicKeyError) {
        try Self.validate(key)
        self.key = key
        self.label = nil
        self.comment = comment.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Parses a wire-encoded public key (an `authorized_keys` blob). The whole input must be one key:
    /// bytes after its fields are `trailingBytes`. Throws `SSHPublicKeyError`.
    public init(blob: some DataProtocol) throws(SSHPublicKeyError) {
        self.key = try Self.parse(Data(blob))
        self.label = nil
        self.comment = nil
    }

    /// Parses an OpenSSH public key line, `<label> <base64 blob> [comment]`: surrounding whitespace
    /// is removed, fields are separated by runs of spaces and tabs, the comment is the rest of the
    /// line. The base64 must be canonical and padded. The key type comes from the blob, not from the
    /// label. Options before the label (`authorized_keys` options) are not read. Throws
    /// `SSHPublicKeyError`.
    public init(line: String) throws(SSHPublicKeyError) {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        let text = Substring(line.trimmingCharacters(in: .whitespacesAndNewlines))
        guard let labelEnd = text.firstIndex(where: isBlank) else { throw .malformedLine }
        let rest = text[labelEnd...].drop(while: isBlank)
        let base64End = rest.firstIndex(where: isBlank) ?? rest.endIndex
        guard let blob = try? Base64.decode(String(rest[..<base64End])) else { throw .malformedBase64 }
        let comment = rest[base64End...].drop(while: isBlank)
        self.key = try Self.parse(blob)
        self.label = String(text[..<labelEnd])
        self.comment = comment.isEmpty ? nil : String(comment)
    }

    private static func parse(_ blob: Data) throws(SSHPublicKeyError) -> Key {
        var reader = SSHWireReader(blob)
        let key: Key
        let type = String(decoding: try field(&reader), as: UTF8.self)
        switch type {
        case "ssh-ed25519":
            key = .ed25519(try field(&reader))
        case "ssh-rsa":
            // RFC 4253 §6.6: e, then n.
            let exponent = try unsignedMPInt(&reader), modulus = try unsignedMPInt(&reader)
            key = .rsa(exponent: exponent, modulus: modulus)
        default:
            guard let curve = ECDSACurve.allCases.first(where: { "ecdsa-sha2-\($0.rawValue)" == type }) else {
                throw .unsupportedKeyType(type)
            }
            let name = String(decoding: try field(&reader), as: UTF8.self)
            guard name == curve.rawValue else { throw .curveMismatch(keyType: type, curve: name) }
            key = .ecdsa(curve: curve, point: try field(&reader))
        }
        guard reader.isAtEnd else { throw .trailingBytes }
        try validate(key)
        return key
    }

    /// The next length-prefixed `string`.
    private static func field(_ reader: inout SSHWireReader) throws(SSHPublicKeyError) -> Data {
        do {
            return try reader.string()
        } catch {
            throw .truncated  // SSHWireReader.string throws only when a length runs past the end
        }
    }

    /// A non-negative mpint as unsigned big-endian bytes without leading zeros.
    private static func unsignedMPInt(_ reader: inout SSHWireReader) throws(SSHPublicKeyError) -> Data {
        let raw = try field(&reader)
        guard raw.first.map({ $0 < 0x80 }) ?? true else { throw .negativeInteger }
        return Data(raw.drop(while: { $0 == 0 }))
    }

    private static func validate(_ key: Key) throws(SSHPublicKeyError) {
        switch key {
        case .ed25519(let point):
            guard point.count == 32 else {
                throw .wrongKeyLength(keyType: key.keyType, expected: 32, found: point.count)
            }
            switch Edwards25519.defect(ofPoint: point) {
            case nil: break
            case .wrongLength: throw .wrongKeyLength(keyType: key.keyType, expected: 32, found: point.count)
            case .nonCanonicalY: throw .invalidEd25519Point(.nonCanonicalY)
            case .notOnCurve: throw .invalidEd25519Point(.notOnCurve)
            case .signedZeroX: throw .invalidEd25519Point(.signedZeroX)
            case .smallOrder: throw .invalidEd25519Point(.smallOrder)
            }
        case .rsa(let exponent, let modulus):
            guard exponent.first != 0, modulus.first != 0 else { throw .nonMinimalInteger }
        case .ecdsa(let curve, let point):
            let valid: Bool
            switch curve {
            case .nistp256: valid = (try? P256.Signing.PublicKey(x963Representation: point)) != nil
            case .nistp384: valid = (try? P384.Signing.PublicKey(x963Representation: point)) != nil
            case .nistp521: valid = (try? P521.Signing.PublicKey(x963Representation: point)) != nil
            }
            guard valid else { throw .invalidECDSAPoint(curve: curve.rawValue) }
        }
    }
}

/// Why bytes or text are not an SSH public key. Descriptions quote at most 64 characters of the
/// input's key type and never the key itself.
public enum SSHPublicKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// How an `ssh-ed25519` key fails RFC 8032 §5.1.3 point decoding, or is of no use as a key.
    public enum Ed25519PointDefect: Sendable, Equatable {
        /// y is not below p = 2^255 − 19 (a non-canonical encoding).
        case nonCanonicalY
        /// No point has this y: (y² − 1) / (d·y² + 1) is not a square mod p.
        case notOnCurve
        /// x = 0 with the sign bit set.
        case signedZeroX
        /// One of the eight points of small order: no one holds its secret, and one signature
        /// verifies every message under it.
        case smallOrder
    }

    /// The line is not `<type> <base64> [comment]` (fewer than two fields).
    case malformedLine
    /// The line's second field is not canonical padded base64.
    case malformedBase64
    /// A length in the blob runs past its end.
    case truncated
    /// Bytes follow the key's fields.
    case trailingBytes
    /// The blob names a key type this codec does not read (for example `ssh-dss` or `sk-ssh-ed25519@openssh.com`).
    case unsupportedKeyType(String)
    /// An `ecdsa-sha2-<curve>` blob names a different curve inside.
    case curveMismatch(keyType: String, curve: String)
    /// An RSA number is negative.
    case negativeInteger
    /// An RSA number given to `init(_:comment:)` has leading zero bytes.
    case nonMinimalInteger
    /// A fixed-size key field has the wrong length.
    case wrongKeyLength(keyType: String, expected: Int, found: Int)
    /// An `ssh-ed25519` key is not a valid point encoding.
    case invalidEd25519Point(Ed25519PointDefect)
    /// An ECDSA key is not an uncompressed point on its curve.
    case invalidECDSAPoint(curve: String)

    /// A sentence saying what is wrong.
    public var description: String {
        switch self {
        case .malformedLine: "not an OpenSSH public key line (`<type> <base64> [comment]`)"
        case .malformedBase64: "the OpenSSH public key is not canonical base64"
        case .truncated: "the SSH public key encoding is truncated"
        case .trailingBytes: "extra bytes after the SSH public key"
        case .unsupportedKeyType(let type): "unsupported SSH key type \(String(reflecting: String(type.prefix(64))))"
        case .curveMismatch(let type, let curve):
            "the \(type) key names the curve \(String(reflecting: String(curve.prefix(64))))"
        case .negativeInteger: "the SSH public key holds a negative integer"
        case .nonMinimalInteger: "an SSH integer has leading zero bytes"
        case .wrongKeyLength(let type, let expected, let found): "the \(type) key is \(found) bytes, not \(expected)"
        case .invalidEd25519Point(.nonCanonicalY): "the ssh-ed25519 key is not a canonical point encoding (y ≥ p)"
        case .invalidEd25519Point(.notOnCurve): "the ssh-ed25519 key is not a point on the curve"
        case .invalidEd25519Point(.signedZeroX): "the ssh-ed25519 key encodes x = 0 with the sign bit set"
        case .invalidEd25519Point(.smallOrder): "the ssh-ed25519 key is a point of small order (no one holds its secret)"
        case .invalidECDSAPoint(let curve): "the ecdsa-sha2-\(curve) key is not an uncompressed point on \(curve)"
        }
    }
}
