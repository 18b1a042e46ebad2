/// Every failure the DNS message codec reports. Each case names one cause, so a caller can log or
/// count bad packets precisely; `description` is a sentence a person can act on.
///
/// Parsing never traps on hostile input: a packet that is not a well-formed DNS message yields
/// exactly one of these errors and no partial result.
public enum DNSError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A read would go past the end of the message (or of a record's data) at this byte offset.
    case truncated(offset: Int)
    /// Bytes remain after the last section announced by the header.
    case trailingData(count: Int)
    /// The message is larger than the codec accepts (`DNSMessage.maximumSize`).
    case messageTooLarge(size: Int)
    /// The header announces more questions or records than the message could hold.
    case recordCountExceedsMessage(count: Int)
    /// A label is longer than 63 bytes (or, when building a name, empty).
    case invalidLabelLength(Int)
    /// A name's wire form is longer than 255 bytes.
    case nameTooLong(length: Int)
    /// A label starts with the reserved type bits `01` or `10` (extended or obsolete label types).
    case unsupportedLabelType(UInt8)
    /// A compression pointer at `offset` does not point strictly before the labels that use it
    /// (forward pointers and loops are refused).
    case invalidCompressionPointer(offset: Int, target: Int)
    /// The message's names, their compression pointers followed, hold more than `limit` labels in
    /// all (`DNSMessage.maximumDecodedLabels`): a small message whose names all point into one
    /// long name would otherwise cost a copy of its labels for each.
    case tooManyLabels(limit: Int)
    /// A record's data length does not match the data its type requires.
    case invalidRecordData(type: UInt16, reason: String)
    /// A name in presentation form (`a.b.local.`) is malformed (bad escape, empty label).
    case invalidName(String)
    /// A TXT record cannot be built or read: a string longer than 255 bytes, an invalid key, or
    /// a record larger than the limit.
    case invalidTXT(String)

    /// A sentence describing the failure, naming the offending value or offset.
    public var description: String {
        switch self {
        case .truncated(let offset): "DNS message truncated at byte \(offset)"
        case .trailingData(let count): "\(count) unexpected bytes after the end of the DNS message"
        case .messageTooLarge(let size): "DNS message of \(size) bytes exceeds the \(DNSMessage.maximumSize)-byte limit"
        case .recordCountExceedsMessage(let count): "DNS header announces \(count) entries, more than the message can hold"
        case .invalidLabelLength(let length): "DNS label of \(length) bytes (must be 1 to 63)"
        case .nameTooLong(let length): "DNS name of \(length) bytes in wire form (limit 255)"
        case .unsupportedLabelType(let byte): "unsupported DNS label type 0x\(String(byte, radix: 16))"
        case .invalidCompressionPointer(let offset, let target):
            "DNS compression pointer at byte \(offset) to byte \(target) does not point backwards"
        case .tooManyLabels(let limit): "the DNS message's names hold more than \(limit) labels in all"
        case .invalidRecordData(let type, let reason): "invalid data in DNS record of type \(type): \(reason)"
        case .invalidName(let reason): "invalid DNS name: \(reason)"
        case .invalidTXT(let reason): "invalid TXT record: \(reason)"
        }
    }
}
