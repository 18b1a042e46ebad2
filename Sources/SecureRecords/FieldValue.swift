import Foundation
import SecureCore

/// The value of one field: text or bytes. Sealed values keep their kind (it is sealed with them).
public enum FieldValue: Sendable, Hashable, CustomStringConvertible {
    /// UTF-8 text.
    case string(String)
    /// Arbitrary bytes.
    case bytes(Data)

    /// The kind byte used in sealed plaintexts and blind-index inputs (docs/FORMATS.md).
    var kindByte: UInt8 {
        switch self {
        case .string: 0x01
        case .bytes: 0x02
        }
    }

    /// The value's bytes (UTF-8 for text).
    var payload: Data {
        switch self {
        case .string(let s): Data(s.utf8)
        case .bytes(let b): b
        }
    }

    /// The payload's byte count (UTF-8 for text).
    var payloadCount: Int {
        switch self {
        case .string(let s): s.utf8.count
        case .bytes(let b): b.count
        }
    }

    /// Calls `body` with `kind || payload` (what is sealed and what the blind index hashes) in a
    /// temporary buffer (on the stack when small), zeroed before it is freed: a bulk load seals
    /// and indexes hundreds of thousands of values, each without a copy on the heap.
    func withEncoded<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        switch self {
        case .string(var s):
            try s.withUTF8 { payload in Result { () throws(E) -> R in try Self.withEncoded(kindByte, UnsafeRawBufferPointer(payload), body) } }.get()
        case .bytes(let b):
            try b.withUnsafeBytes { payload in Result { () throws(E) -> R in try Self.withEncoded(kindByte, payload, body) } }.get()
        }
    }

    private static func withEncoded<R, E: Error>(
        _ kind: UInt8, _ payload: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        try withUnsafeTemporaryAllocation(byteCount: 1 + payload.count, alignment: 1) { (buffer) throws(E) -> R in
            defer { Zeroization.zero(buffer) }
            buffer[0] = kind
            UnsafeMutableRawBufferPointer(rebasing: buffer[1...]).copyMemory(from: payload)
            return try body(UnsafeRawBufferPointer(buffer))
        }
    }

    /// Decodes `kind || payload`; nil for an unknown kind or text that is not UTF-8.
    init?(encoded: Data) {
        guard let kind = encoded.first else { return nil }
        let payload = Data(encoded.dropFirst())
        switch kind {
        case 0x01:
            guard let s = String(data: payload, encoding: .utf8) else { return nil }
            self = .string(s)
        case 0x02:
            self = .bytes(payload)
        default:
            return nil
        }
    }

    /// The text, or nil for bytes.
    public var string: String? { if case .string(let s) = self { s } else { nil } }

    /// The bytes (UTF-8 for text).
    public var data: Data { payload }

    /// The text, or the bytes as base64 prefixed with `base64:`. Sealed field values are only
    /// described once opened; `description` of a `FieldValue` shows the value.
    public var description: String {
        switch self {
        case .string(let s): s
        case .bytes(let b): "base64:" + b.base64EncodedString()
        }
    }
}

extension FieldValue: LosslessStringConvertible {
    /// Parses what `description` prints: `base64:` then standard base64 is bytes (nil when that
    /// base64 is malformed), anything else is text. So a text value that itself starts with
    /// `base64:` cannot be written this way: give it as bytes (`base64:` of its UTF-8).
    public init?(_ description: String) {
        guard description.hasPrefix("base64:") else {
            self = .string(description)
            return
        }
        guard let bytes = Data(base64Encoded: String(description.dropFirst(7))) else { return nil }
        self = .bytes(bytes)
    }
}

extension FieldValue: ExpressibleByStringLiteral {
    /// A text value.
    public init(stringLiteral value: String) { self = .string(value) }
}
