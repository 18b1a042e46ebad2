import Foundation

/// Reads the SSH wire encoding (RFC 4251 §5): uint32 lengths and integers, big-endian.
public struct SSHWireReader: Sendable {
    private let data: Data
    private var offset = 0

    /// A reader at the start of `data`.
    public init(_ data: Data) { self.data = Data(data) }

    /// True when every byte has been read.
    public var isAtEnd: Bool { offset == data.count }

    /// The next `count` bytes; throws `OpenSSHKeyFileError.malformed` when fewer remain.
    public mutating func bytes(_ count: Int) throws(OpenSSHKeyFileError) -> Data {
        guard count >= 0, data.count - offset >= count else { throw OpenSSHKeyFileError.malformed("truncated SSH encoding") }
        defer { offset += count }
        return data.subdata(in: offset..<offset + count)
    }

    /// A big-endian uint32.
    /// Throws `OpenSSHKeyFileError.malformed` when fewer than 4 bytes remain.
    public mutating func uint32() throws(OpenSSHKeyFileError) -> UInt32 { try bytes(4).reduce(0) { $0 << 8 | UInt32($1) } }

    /// A length-prefixed `string` (arbitrary bytes).
    /// Throws `OpenSSHKeyFileError.malformed` when the length runs past the end.
    public mutating func string() throws(OpenSSHKeyFileError) -> Data { try bytes(Int(uint32())) }

    /// A non-negative `mpint` as unsigned big-endian bytes without leading zeros; negative values
    /// are refused.
    /// Throws `OpenSSHKeyFileError.malformed` when truncated or negative.
    public mutating func unsignedMPInt() throws(OpenSSHKeyFileError) -> Data {
        let raw = try string()
        guard raw.first.map({ $0 < 0x80 }) ?? true else { throw OpenSSHKeyFileError.malformed("negative mpint") }
        return Data(raw.drop(while: { $0 == 0 }))
    }

    /// Every remaining byte.
    /// Never fails in practice (typed as the other reads).
    public mutating func rest() throws(OpenSSHKeyFileError) -> Data { try bytes(data.count - offset) }
}

/// Writes the SSH wire encoding (RFC 4251 §5): uint32 lengths and integers, big-endian. The
/// inverse of `SSHWireReader`.
public struct SSHWireWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes = Data()

    /// An empty writer.
    public init() {}

    /// Appends a big-endian uint32.
    public mutating func uint32(_ value: UInt32) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends a length-prefixed `string` of arbitrary bytes.
    public mutating func string(_ value: some DataProtocol) {
        uint32(UInt32(value.count))
        bytes.append(contentsOf: value)
    }

    /// Appends a length-prefixed `string` holding the UTF-8 of `value`.
    public mutating func string(_ value: String) { string(Data(value.utf8)) }

    /// Appends a non-negative `mpint` given as unsigned big-endian bytes: minimal, with a 0x00
    /// prefix when the top bit is set (so it does not read as negative); zero is the empty string.
    public mutating func unsignedMPInt(_ unsigned: some DataProtocol) {
        let minimal = Data(unsigned.drop(while: { $0 == 0 }))
        string(minimal.first.map { $0 & 0x80 != 0 } == true ? Data([0]) + minimal : minimal)
    }
}
