import Foundation

/// The wire layout of a native hybrid message, version 1 (docs/FORMATS.md, "SecureKeys hybrid
/// message"): `"SFK1" || scheme || recipient fingerprint || [sender fingerprint] || scheme fields || body`.
struct HybridMessage {
    static let magic = Data("SFK1".utf8)

    /// The scheme byte.
    enum Scheme: UInt8 {
        /// HPKE base mode (X25519, P-256/384/521 recipients).
        case hpkeBase = 0x01
        /// HPKE auth mode: the sender's static key authenticates the message.
        case hpkeAuth = 0x02
        /// RSA-OAEP-SHA256 wraps an AES-256-GCM key.
        case rsaOAEP = 0x03
        /// As `rsaOAEP`, and the plaintext starts with the sender's RSA-PSS-SHA256 signature.
        case rsaOAEPSigned = 0x04

        var hasSender: Bool { self == .hpkeAuth || self == .rsaOAEPSigned }
        var isHPKE: Bool { self == .hpkeBase || self == .hpkeAuth }
    }

    let scheme: Scheme
    let recipient: Data
    let sender: Data?

    /// The fixed part: magic, scheme and fingerprints.
    var prefix: Data {
        var bytes = Self.magic
        bytes.append(scheme.rawValue)
        bytes.append(recipient)
        if let sender { bytes.append(sender) }
        return bytes
    }

    /// Reads the fixed part and returns it with the offset of the scheme fields.
    static func parsePrefix(_ message: Data) throws -> (HybridMessage, rest: Data) {
        let bytes = Data(message)
        guard bytes.count >= 5 else {
            throw bytes.starts(with: magic.prefix(bytes.count)) ? KeyError.truncated : KeyError.unrecognizedMessage("bad magic")
        }
        guard bytes.prefix(4) == magic else { throw KeyError.unrecognizedMessage("bad magic") }
        guard let scheme = Scheme(rawValue: bytes[4]) else {
            throw KeyError.unrecognizedMessage("unknown scheme 0x\(String(bytes[4], radix: 16))")
        }
        let fingerprintsLength = scheme.hasSender ? 64 : 32
        guard bytes.count >= 5 + fingerprintsLength else { throw KeyError.truncated }
        let recipient = bytes.subdata(in: 5..<37)
        let sender = scheme.hasSender ? bytes.subdata(in: 37..<69) : nil
        return (HybridMessage(scheme: scheme, recipient: recipient, sender: sender), bytes.subdata(in: (5 + fingerprintsLength)..<bytes.count))
    }
}
