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

    /// Reads the fixed part and returns it with the rest of the message (a slice, not a copy).
    static func parsePrefix(_ message: Data) throws(KeyError) -> (HybridMessage, rest: Data) {
        let start = message.startIndex
        guard message.count >= 5 else {
            throw message.starts(with: magic.prefix(message.count)) ? KeyError.truncated : KeyError.unrecognizedMessage("bad magic")
        }
        guard message.prefix(4) == magic else { throw KeyError.unrecognizedMessage("bad magic") }
        guard let scheme = Scheme(rawValue: message[start + 4]) else {
            throw KeyError.unrecognizedMessage("unknown scheme 0x\(String(message[start + 4], radix: 16))")
        }
        let fingerprintsEnd = start + 5 + (scheme.hasSender ? 64 : 32)
        guard message.endIndex >= fingerprintsEnd else { throw KeyError.truncated }
        let recipient = Data(message[(start + 5)..<(start + 37)])
        let sender = scheme.hasSender ? Data(message[(start + 37)..<(start + 69)]) : nil
        return (HybridMessage(scheme: scheme, recipient: recipient, sender: sender), message[fingerprintsEnd...])
    }
}
