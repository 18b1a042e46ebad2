import Crypto
import SecureChannel
import SecureKeys
import ServiceDiscovery
import Testing

/// The TXT schema of a SecureChannel advertisement (docs/FORMATS.md), through the real TXT codec.
@Suite struct AdvertisementTests {
    let key = Curve25519.KeyAgreement.PrivateKey().publicKey

    @Test func whatAServerAdvertisesReadsBackThroughTheTXTWireForm() throws {
        let configuration = SecureChannel.Configuration(protocolName: try Noise.ProtocolName(parsing: "Noise_XX_25519_AESGCM_SHA256"))
        let advertised = SecureChannel.Advertisement(staticKey: key, configuration: configuration)
        let txt = try TXTRecord(advertised.txtAttributes)
        #expect(txt.dictionary == ["fp": SecureChannel.fingerprint(of: key).description, "proto": "Noise_XX_25519_AESGCM_SHA256", "v": "2"])
        let received = TXTRecord(strings: txt.strings)
        let read = SecureChannel.Advertisement { received[$0]?.string }
        #expect(read == advertised)
        #expect(read.fingerprint == SecureChannel.fingerprint(of: key))
    }

    @Test func readersFollowTheTXTRulesAndKeepWhatIsNotAFingerprintAsText() {
        // Keys ignore ASCII case, the first occurrence wins, unknown keys are ignored.
        let strings = ["FP=sha256-spki:not-hex", "fp=sha256-spki:" + String(repeating: "0", count: 64), "Proto=x", "extra=1"]
        let txt = TXTRecord(strings: strings.map { Array($0.utf8) })
        let read = SecureChannel.Advertisement { txt[$0]?.string }
        #expect(read.advertisedFingerprint == "sha256-spki:not-hex")
        #expect(read.fingerprint == nil)  // shown as text, never taken for a key
        #expect(read.protocolName == "x" && read.version == nil)
        let empty = SecureChannel.Advertisement { TXTRecord()[$0]?.string }
        #expect(empty.advertisedFingerprint == nil && empty.txtAttributes.isEmpty)
    }
}
