import Crypto
import SecureKeys

extension SecureChannel {
    /// What a SecureChannel server says about itself in its DNS-SD TXT record (docs/FORMATS.md,
    /// "TXT keys reserved for SecureChannel"): its static key's fingerprint (`fp`), its Noise
    /// protocol (`proto`) and the framing version (`v`). Untrusted, like everything discovery
    /// returns: only the handshake, checked against a `PeerTrust`, authenticates a server; the
    /// advertised fingerprint is a hint to show.
    public struct Advertisement: Sendable, Equatable {
        /// The framing version advertised in `v` (the one the default prologue names).
        public static let framingVersion = "2"

        /// The `fp` value as advertised (whatever text it is); nil when absent.
        public var advertisedFingerprint: String?
        /// The `proto` value; nil when absent.
        public var protocolName: String?
        /// The `v` value; nil when absent.
        public var version: String?

        /// The advertisement of a server with `staticKey` and `configuration`.
        public init(staticKey: Curve25519.KeyAgreement.PublicKey, configuration: Configuration = Configuration()) {
            advertisedFingerprint = SecureChannel.fingerprint(of: staticKey).description
            protocolName = configuration.protocolName.description
            version = Self.framingVersion
        }

        /// Reads an advertisement from a TXT record through `attribute`, which returns the text
        /// value of a key (the TXT rules of RFC 6763 §6: keys compared ignoring ASCII case, the
        /// first occurrence wins). Keys other than `fp`, `proto` and `v` are ignored.
        public init(attribute: (String) -> String?) {
            advertisedFingerprint = attribute("fp")
            protocolName = attribute("proto")
            version = attribute("v")
        }

        /// The advertised fingerprint, when it is one (`sha256-spki:` and 64 hex digits).
        public var fingerprint: KeyFingerprint? { advertisedFingerprint.flatMap(KeyFingerprint.init(parsing:)) }

        /// The TXT attributes to advertise: `fp`, `proto` and `v`, those that are set.
        public var txtAttributes: [String: String] {
            var attributes: [String: String] = [:]
            attributes["fp"] = advertisedFingerprint
            attributes["proto"] = protocolName
            attributes["v"] = version
            return attributes
        }
    }
}
