import Foundation

extension Envelope {
    /// The PEM label of an armored envelope (docs/FORMATS.md, "Armor").
    public static let armorLabel = "SECUREFOUNDATION ENVELOPE"

    /// `envelope` as PEM text under `armorLabel` (64-character base64 lines), for channels that
    /// carry only text. `dearmor` gives back the same bytes.
    public static func armor<E: DataProtocol>(_ envelope: E) -> String {
        PEM.encode(envelope, label: armorLabel)
    }

    /// The envelope bytes inside armored text. Throws `SecureCoreError.malformedEncoding` when the
    /// text is not one well-formed PEM block labelled `armorLabel`; nothing is decrypted here.
    public static func dearmor(_ text: String) throws(SecureCoreError) -> Data {
        try PEM.decode(text, expectedLabel: armorLabel).der
    }
}

/// The encodings of sealed data SecureCore writes, told apart by their first bytes, so a reader
/// given "some sealed file" can pick `Envelope.open`, `Envelope.dearmor` or `StreamEnvelope`.
public enum SealedDataEncoding: Sendable, Equatable, CaseIterable {
    /// A binary envelope (`SFE1`), opened whole by `Envelope.open`.
    case envelope
    /// A PEM-armored envelope (`-----BEGIN`); `Envelope.dearmor` gives the binary envelope.
    case armoredEnvelope
    /// A chunked stream (`SFS1`), decrypted with bounded memory by `StreamEnvelope.decrypt`.
    case stream

    /// How many leading bytes `detect` needs to decide (fewer are enough for short inputs).
    public static let prefixLength = 10

    /// The encoding whose signature `prefix` (the first `prefixLength` bytes of the data, or all of
    /// it when shorter) starts with; nil for anything else, including an empty or cut-off prefix.
    /// Only the signature is checked: the data may still be malformed, and opening it says so.
    public static func detect<D: DataProtocol>(_ prefix: D) -> SealedDataEncoding? {
        let bytes = Array(prefix.prefix(prefixLength))
        if bytes.starts(with: Envelope.magic) { return .envelope }
        if bytes.starts(with: StreamEnvelope.magic) { return .stream }
        if bytes.starts(with: Array("-----BEGIN".utf8)) { return .armoredEnvelope }
        return nil
    }
}
