import ArgumentParser
import Foundation
import SecureFoundation

struct RandomCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "random",
        abstract: "Print secure random bytes (hex, base64, base64url or raw) or a random string.",
        discussion: "Examples: `sf random -n 32 > key.hex`, `sf random --string 20 --alphabet alphanumeric`.")

    enum Format: String, ExpressibleByArgument, CaseIterable { case hex, base64, base64url, raw }
    enum AlphabetName: String, ExpressibleByArgument, CaseIterable { case alphanumeric, lowercase, digits, hex, base64url }

    @Option(name: [.customShort("n"), .long], help: "Number of random bytes.")
    var count: Int = 32

    @Option(help: "Output encoding of the bytes: \(Format.allCases.map(\.rawValue).joined(separator: ", ")).")
    var format: Format = .hex

    @Option(help: "Print a random string of this many characters instead of bytes.")
    var string: Int?

    @Option(help: "Alphabet for --string: \(AlphabetName.allCases.map(\.rawValue).joined(separator: ", ")).")
    var alphabet: AlphabetName = .alphanumeric

    @Option(help: "Custom alphabet for --string (its distinct characters).")
    var characters: String?

    /// The most bytes or characters one run produces (4 GiB); output is streamed in chunks.
    static let maximumCount = 1 << 32
    /// Bytes per chunk: a multiple of 3, so base64 chunks concatenate without padding.
    static let chunk = 48 << 10

    func validate() throws {
        guard count >= 0 else { throw ValidationError("--count must not be negative") }
        guard count <= Self.maximumCount else { throw ValidationError("--count must be at most \(Self.maximumCount) (4 GiB)") }
        if let string, string < 0 { throw ValidationError("--string must not be negative") }
        if let string, string > Self.maximumCount {
            throw ValidationError("--string must be at most \(Self.maximumCount) characters")
        }
    }

    func run() throws {
        if let length = string {
            let chosen: SecureRandom.Alphabet =
                if let characters { try SecureRandom.Alphabet(characters) } else {
                    switch alphabet {
                    case .alphanumeric: .alphanumeric
                    case .lowercase: .lowercase
                    case .digits: .digits
                    case .hex: .hex
                    case .base64url: .base64url
                    }
                }
            try stream(total: length, chunk: Self.chunk) { SecureRandom.string(length: $0, alphabet: chosen).utf8 }
            return
        }
        // Streamed in chunks, so memory stays bounded for any count.
        try stream(total: count, chunk: Self.chunk) { size -> Data in
            let bytes = SecureRandom.bytes(count: size)
            switch format {
            case .hex: return Data(Hex.encode(bytes).utf8)
            case .base64: return Data(Base64.encode(bytes).utf8)
            case .base64url: return Data(Base64URL.encode(bytes).utf8)
            case .raw: return bytes
            }
        }
    }

    /// Writes `make(size)` for consecutive chunks of `total` to standard output, then a newline
    /// unless the format is raw bytes.
    private func stream<C: Collection>(total: Int, chunk: Int, _ make: (Int) throws -> C) throws where C.Element == UInt8 {
        let output = FileOutput(descriptor: 1, name: "standard output")
        var remaining = total
        while remaining > 0 {
            let size = min(chunk, remaining)
            try output.write(Data(try make(size)))
            remaining -= size
        }
        if string != nil || format != .raw { try output.write(Data("\n".utf8)) }
    }
}
