import Crypto
import Foundation
import SecureCore

/// OpenSSH key encodings: public key lines (`ssh-ed25519 AAAA… comment`) and unencrypted
/// `openssh-key-v1` private key files (PROTOCOL.key in OpenSSH).
enum SSHKeys {
    static func parseRecipient(_ line: String) throws -> any Age.Recipient {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count >= 2, let blob = try? Base64.decode(String(fields[1])) else {
            throw AgeError.invalidRecipient("not an OpenSSH public key line")
        }
        var reader = WireReader(blob)
        let type = try reader.string()
        switch (String(fields[0]), String(decoding: type, as: UTF8.self)) {
        case ("ssh-ed25519", "ssh-ed25519"):
            let key = try reader.string()
            guard reader.isAtEnd, key.count == 32 else { throw AgeError.invalidRecipient("malformed ssh-ed25519 public key") }
            return try Age.SSHEd25519Recipient(publicKey: key, wireFormat: blob)
        case ("ssh-rsa", "ssh-rsa"):
            throw AgeError.invalidRecipient(
                "ssh-rsa recipients need RSA-OAEP with a label, which swift-crypto does not offer; use an ssh-ed25519 or age1 key")
        default:
            throw AgeError.invalidRecipient("unsupported SSH key type \(fields[0])")
        }
    }

    static func parseIdentity(_ text: String) throws -> any Age.Identity {
        let begin = "-----BEGIN OPENSSH PRIVATE KEY-----", end = "-----END OPENSSH PRIVATE KEY-----"
        guard let start = text.range(of: begin), let stop = text.range(of: end, range: start.upperBound..<text.endIndex),
            let blob = try? Base64.decode(text[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace })
        else { throw AgeError.invalidIdentity("not an OpenSSH private key file") }
        var reader = WireReader(blob)
        guard try reader.bytes(15) == Data("openssh-key-v1\0".utf8) else {
            throw AgeError.invalidIdentity("not an openssh-key-v1 private key")
        }
        let cipher = try reader.string(), kdf = try reader.string()
        _ = try reader.string()  // KDF options
        guard cipher == Data("none".utf8), kdf == Data("none".utf8) else {
            throw AgeError.invalidIdentity("passphrase-protected OpenSSH keys are not supported; remove the passphrase with ssh-keygen -p")
        }
        guard try reader.uint32() == 1 else { throw AgeError.invalidIdentity("the OpenSSH key file must hold exactly one key") }
        let publicBlob = try reader.string()
        var secret = WireReader(try reader.string())
        guard try secret.uint32() == secret.uint32() else { throw AgeError.invalidIdentity("OpenSSH key check bytes differ") }
        let type = String(decoding: try secret.string(), as: UTF8.self)
        switch type {
        case "ssh-ed25519":
            let publicKey = try secret.string(), both = try secret.string()
            guard publicKey.count == 32, both.count == 64, both.suffix(32) == publicKey else {
                throw AgeError.invalidIdentity("malformed ssh-ed25519 private key")
            }
            return try Age.SSHEd25519Identity(seed: SecretBytes(both.prefix(32)), wireFormat: publicBlob)
        case "ssh-rsa":
            throw AgeError.invalidIdentity(
                "ssh-rsa identities need RSA-OAEP with a label, which swift-crypto does not offer")
        default:
            throw AgeError.invalidIdentity("unsupported SSH key type \(type)")
        }
    }

    /// The 4-byte stanza tag: SHA-256 of the public key's wire format, truncated.
    static func tag(_ wireFormat: Data) -> String { RawBase64.encode(Data(SHA256.hash(data: wireFormat)).prefix(4)) }
}

/// Reads the SSH wire encoding (RFC 4251 §5): uint32 lengths, big-endian.
struct WireReader {
    private let data: Data
    private var offset = 0

    init(_ data: Data) { self.data = Data(data) }

    var isAtEnd: Bool { offset == data.count }

    mutating func bytes(_ count: Int) throws -> Data {
        guard count >= 0, data.count - offset >= count else { throw AgeError.invalidIdentity("truncated SSH key encoding") }
        defer { offset += count }
        return data.subdata(in: offset..<offset + count)
    }

    mutating func uint32() throws -> UInt32 { try bytes(4).reduce(0) { $0 << 8 | UInt32($1) } }

    mutating func string() throws -> Data { try bytes(Int(uint32())) }
}
