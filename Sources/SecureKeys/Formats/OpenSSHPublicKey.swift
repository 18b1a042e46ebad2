import Crypto
import Foundation
import SecureCore

/// OpenSSH public key lines (`authorized_keys` format, RFC 4253 §6.6, RFC 5656 §3.1, RFC 8709 §4):
/// `<type> <base64 blob> [comment]` for `ssh-rsa`, `ssh-ed25519` and `ecdsa-sha2-nistp256/384/521`.
enum OpenSSHPublicKey {
    static func encode(_ key: AsymmetricPublicKey, comment: String? = nil) throws -> String {
        var blob = WireWriter()
        let type: String
        switch key {
        case .rsa(let rsa):
            type = "ssh-rsa"
            let components = rsa.components
            blob.string(type)
            blob.mpint(components.exponent)
            blob.mpint(components.modulus)
        case .ed25519(let ed):
            type = "ssh-ed25519"
            blob.string(type)
            blob.string(ed.rawRepresentation)
        case .p256(let ec): type = blob.ecdsa("nistp256", ec.x963Representation)
        case .p384(let ec): type = blob.ecdsa("nistp384", ec.x963Representation)
        case .p521(let ec): type = blob.ecdsa("nistp521", ec.x963Representation)
        case .x25519:
            throw KeyError.notApplicable("OpenSSH has no X25519 public key format")
        }
        let line = "\(type) \(Base64.encode(blob.bytes))"
        return comment.map { "\(line) \($0)" } ?? line
    }

    static func decode(_ line: String) throws -> AsymmetricPublicKey {
        let fields = line.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ", maxSplits: 2)
        guard fields.count >= 2 else { throw KeyError.malformedOpenSSH("expected `<type> <base64> [comment]`") }
        guard let blob = try? Base64.decode(String(fields[1])) else { throw KeyError.malformedOpenSSH("key data is not base64") }
        var reader = WireReader(blob)
        let type = try reader.string()
        guard type == Data(fields[0].utf8) else { throw KeyError.malformedOpenSSH("key type in the blob differs from the line") }
        let key: AsymmetricPublicKey
        switch String(decoding: type, as: UTF8.self) {
        case "ssh-rsa":
            let exponent = try reader.mpint(), modulus = try reader.mpint()
            key = .rsa(try RSAPublicKey(modulus: modulus, exponent: exponent))
        case "ssh-ed25519":
            let raw = try reader.string()
            key = .ed25519(try curveKey { try Curve25519.Signing.PublicKey(rawRepresentation: raw) })
        case "ecdsa-sha2-nistp256": key = .p256(try curveKey { try P256.Signing.PublicKey(x963Representation: reader.ecdsa("nistp256")) })
        case "ecdsa-sha2-nistp384": key = .p384(try curveKey { try P384.Signing.PublicKey(x963Representation: reader.ecdsa("nistp384")) })
        case "ecdsa-sha2-nistp521": key = .p521(try curveKey { try P521.Signing.PublicKey(x963Representation: reader.ecdsa("nistp521")) })
        default: throw KeyError.unsupportedAlgorithm("OpenSSH key type \(fields[0])")
        }
        guard reader.isAtEnd else { throw KeyError.malformedOpenSSH("extra bytes after the key") }
        return key
    }
}

/// SSH wire encoding (RFC 4251 §5): `string` and `mpint` with 32-bit big-endian lengths.
private struct WireWriter {
    var bytes = Data()

    mutating func string(_ value: some DataProtocol) {
        withUnsafeBytes(of: UInt32(value.count).bigEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: value)
    }

    mutating func string(_ value: String) { string(Data(value.utf8)) }

    /// Non-negative mpint: minimal big-endian, with a 0x00 prefix when the top bit is set.
    mutating func mpint(_ unsigned: Data) {
        let minimal = unsigned.drop(while: { $0 == 0 })
        string(minimal.first.map { $0 & 0x80 != 0 } == true ? Data([0]) + minimal : Data(minimal))
    }

    mutating func ecdsa(_ curve: String, _ point: Data) -> String {
        let type = "ecdsa-sha2-\(curve)"
        string(type)
        string(curve)
        string(point)
        return type
    }
}

private struct WireReader {
    private let data: Data
    private var offset: Int

    init(_ data: Data) {
        self.data = data
        offset = data.startIndex
    }

    var isAtEnd: Bool { offset == data.endIndex }

    mutating func string() throws -> Data {
        guard data.endIndex - offset >= 4 else { throw KeyError.malformedOpenSSH("truncated length") }
        let length = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        offset += 4
        guard data.endIndex - offset >= length else { throw KeyError.malformedOpenSSH("truncated field") }
        defer { offset += length }
        return Data(data[offset..<offset + length])
    }

    /// A non-negative mpint, returned as unsigned big-endian bytes.
    mutating func mpint() throws -> Data {
        let value = try string()
        guard value.first.map({ $0 & 0x80 == 0 }) ?? true else { throw KeyError.malformedOpenSSH("negative integer") }
        return value
    }

    mutating func ecdsa(_ curve: String) throws -> Data {
        guard try string() == Data(curve.utf8) else { throw KeyError.malformedOpenSSH("curve name does not match the key type") }
        return try string()
    }
}

extension AsymmetricPublicKey {
    /// The fingerprint `ssh-keygen -l` prints: `SHA256:` and the unpadded base64 of SHA-256 of the
    /// key's SSH wire encoding (the `authorized_keys` blob). Nil for X25519, which OpenSSH has no
    /// encoding for.
    public var openSSHFingerprint: String? {
        guard let line = try? OpenSSHPublicKey.encode(self), let blob = try? Base64.decode(String(line.split(separator: " ")[1]))
        else { return nil }
        let digest = Base64.encode(Hashing.hash(blob, with: .sha256))
        return "SHA256:" + digest.replacingOccurrences(of: "=", with: "")
    }
}
