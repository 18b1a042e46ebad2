import Foundation

/// An unencrypted OpenSSH private key file (`-----BEGIN OPENSSH PRIVATE KEY-----`, the
/// `openssh-key-v1` format of OpenSSH's PROTOCOL.key) holding exactly one key, as `ssh-keygen`
/// writes it. The one reader of this format, shared by SecureKeys (`sf key`) and AgeEncryption
/// (`sf decrypt -i`); each interprets the private fields of the key types it supports.
public struct OpenSSHPrivateKeyFile: Sendable {
    /// The first line of the file.
    public static let begin = "-----BEGIN OPENSSH PRIVATE KEY-----"
    private static let end = "-----END OPENSSH PRIVATE KEY-----"
    private static let magic = Data("openssh-key-v1\0".utf8)

    /// The key type named in the private section, for example `ssh-ed25519` or `ssh-rsa`.
    public let keyType: String
    /// The public key in SSH wire format (the blob of an `authorized_keys` line).
    public let publicKeyBlob: Data
    /// The private section's fields after the key type (type-specific numbers, then the comment).
    private let privateFields: SecretBytes

    /// Parses the file text. Throws `OpenSSHKeyFileError`: not this format, passphrase-protected
    /// (`ssh-keygen -p` removes the passphrase), not exactly one key, check bytes that differ (a
    /// damaged file), or a truncated or malformed encoding.
    public init(_ text: String) throws(OpenSSHKeyFileError) {
        guard let start = text.range(of: Self.begin),
            let stop = text.range(of: Self.end, range: start.upperBound..<text.endIndex)
        else { throw OpenSSHKeyFileError.notOpenSSHPrivateKey }
        let body = text[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
        guard let blob = try? Base64.decode(String(body)) else {
            throw OpenSSHKeyFileError.malformed("the body is not base64")
        }
        var reader = SSHWireReader(blob)
        guard try reader.bytes(Self.magic.count) == Self.magic else {
            throw OpenSSHKeyFileError.malformed("not an openssh-key-v1 key")
        }
        let cipher = try reader.string(), kdf = try reader.string(), kdfOptions = try reader.string()
        guard cipher == Data("none".utf8), kdf == Data("none".utf8) else {
            throw OpenSSHKeyFileError.passphraseProtected
        }
        guard kdfOptions.isEmpty else { throw OpenSSHKeyFileError.malformed("KDF options without a KDF") }
        guard try reader.uint32() == 1 else { throw OpenSSHKeyFileError.notExactlyOneKey }
        publicKeyBlob = try reader.string()
        let privateSection = try reader.string()
        guard reader.isAtEnd else { throw OpenSSHKeyFileError.malformed("data after the private section") }
        var secret = SSHWireReader(privateSection)
        guard try secret.uint32() == secret.uint32() else { throw OpenSSHKeyFileError.checkBytesDiffer }
        keyType = String(decoding: try secret.string(), as: UTF8.self)
        let fields = try secret.rest()
        try Self.checkTrailer(fields, keyType: keyType, sectionLength: privateSection.count)
        privateFields = SecretBytes(fields)
    }

    /// The SSH strings (mpints included) of each key type's private fields (PROTOCOL.key):
    /// ssh-ed25519 the public key and the seed with it; ssh-rsa n, e, d, iqmp, p, q; ECDSA the
    /// curve, the point, the scalar.
    private static let privateFieldCounts = [
        "ssh-ed25519": 2, "ssh-rsa": 6, "ecdsa-sha2-nistp256": 3, "ecdsa-sha2-nistp384": 3, "ecdsa-sha2-nistp521": 3,
    ]

    /// Checks what follows a known key type's private fields as `ssh-keygen` writes it: the
    /// comment, then padding 1, 2, 3, … to a multiple of 8 bytes (the cipher "none"'s block), and
    /// nothing else. Trailing bytes would be read by nobody, so a file is taken only as written.
    private static func checkTrailer(_ fields: Data, keyType: String, sectionLength: Int) throws(OpenSSHKeyFileError) {
        guard let count = privateFieldCounts[keyType] else { return }  // refused by every caller
        var reader = SSHWireReader(fields)
        for _ in 0..<count { _ = try reader.string() }
        _ = try reader.string()  // the comment
        let padding = try reader.rest()
        guard sectionLength % 8 == 0, padding.count < 8, padding.enumerated().allSatisfy({ $0.element == UInt8($0.offset + 1) }) else {
            throw OpenSSHKeyFileError.malformed("the private section's padding is not 1, 2, 3, … to 8 bytes")
        }
    }

    /// The 32-byte seed of an `ssh-ed25519` key (RFC 8032 private key), after checking that the
    /// private section's public key matches its own copy and the file's public key blob (read with
    /// `SSHPublicKey`, so it is also a valid Ed25519 point encoding).
    /// Throws `OpenSSHKeyFileError.malformed` when it does not.
    public func ed25519Seed() throws(OpenSSHKeyFileError) -> SecretBytes {
        guard keyType == "ssh-ed25519" else { throw OpenSSHKeyFileError.malformed("not an ssh-ed25519 key") }
        return try withPrivateFields { fields throws(OpenSSHKeyFileError) in
            let publicKey = try fields.string(), both = try fields.string()
            guard publicKey.count == 32, both.count == 64, both.suffix(32) == publicKey,
                (try? SSHPublicKey(blob: publicKeyBlob))?.key == .ed25519(publicKey)
            else { throw OpenSSHKeyFileError.malformed("malformed ssh-ed25519 private key") }
            return SecretBytes(both.prefix(32))
        }
    }

    /// Runs `body` with a reader over the private fields that follow the key type (for `ssh-rsa`:
    /// n, e, d, iqmp, p, q as mpints; for `ecdsa-sha2-*`: curve name, point, scalar), then the comment.
    /// Throws what `body` throws (typed: `E`; the reader throws `OpenSSHKeyFileError`).
    public func withPrivateFields<R, E: Error>(_ body: (inout SSHWireReader) throws(E) -> R) throws(E) -> R {
        var reader = privateFields.withUnsafeBytes { SSHWireReader(Data($0)) }
        return try body(&reader)
    }
}

/// Why an OpenSSH private key file was refused.
public enum OpenSSHKeyFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The text has no `OPENSSH PRIVATE KEY` block.
    case notOpenSSHPrivateKey
    /// The key is encrypted with a passphrase, which is not supported.
    case passphraseProtected
    /// The file holds zero or several keys.
    case notExactlyOneKey
    /// The two check integers differ: the file is damaged.
    case checkBytesDiffer
    /// The encoding is truncated or malformed.
    case malformed(String)

    /// A sentence saying what is wrong and, where possible, what to do.
    public var description: String {
        switch self {
        case .notOpenSSHPrivateKey: "not an OpenSSH private key file"
        case .passphraseProtected:
            "passphrase-protected OpenSSH keys are not supported; remove the passphrase with ssh-keygen -p"
        case .notExactlyOneKey: "the OpenSSH key file must hold exactly one key"
        case .checkBytesDiffer: "the OpenSSH key file is damaged (check bytes differ)"
        case .malformed(let detail): "malformed OpenSSH private key: \(detail)"
        }
    }
}
