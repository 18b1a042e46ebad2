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
            throw AgeError.unsupportedKeyType(
                "ssh-rsa recipients need RSA-OAEP with a label, which swift-crypto does not offer; use an ssh-ed25519 or age1 key")
        default:
            throw AgeError.invalidRecipient("unsupported SSH key type \(fields[0])")
        }
    }

    /// An identity from an unencrypted OpenSSH private key file, read by SecureCore's
    /// `OpenSSHPrivateKeyFile` (the reader `sf key` uses too). Only ssh-ed25519 is supported.
    static func parseIdentity(_ text: String) throws -> any Age.Identity {
        do {
            let file = try OpenSSHPrivateKeyFile(text)
            switch file.keyType {
            case "ssh-ed25519":
                return try Age.SSHEd25519Identity(seed: file.ed25519Seed(), wireFormat: file.publicKeyBlob)
            case "ssh-rsa":
                throw AgeError.unsupportedKeyType(
                    "ssh-rsa identities need RSA-OAEP with a label, which swift-crypto does not offer")
            default:
                throw AgeError.invalidIdentity("unsupported SSH key type \(file.keyType)")
            }
        } catch let error as OpenSSHKeyFileError {
            throw AgeError.invalidIdentity(error.description)
        }
    }

    /// The 4-byte stanza tag: SHA-256 of the public key's wire format, truncated.
    static func tag(_ wireFormat: Data) -> String { RawBase64.encode(Data(SHA256.hash(data: wireFormat)).prefix(4)) }
}

/// The SSH wire reader of SecureCore, with its errors reported as invalid keys.
struct WireReader {
    private var reader: SSHWireReader

    init(_ data: Data) { reader = SSHWireReader(data) }

    var isAtEnd: Bool { reader.isAtEnd }

    mutating func string() throws -> Data {
        do {
            return try reader.string()
        } catch {
            throw AgeError.invalidIdentity("truncated SSH key encoding")
        }
    }
}
