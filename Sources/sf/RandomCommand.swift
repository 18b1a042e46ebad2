import ArgumentParser
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

    func validate() throws {
        guard count >= 0 else { throw ValidationError("--count must not be negative") }
        if let string, string < 0 { throw ValidationError("--string must not be negative") }
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
            print(SecureRandom.string(length: length, alphabet: chosen))
            return
        }
        let bytes = SecureRandom.bytes(count: count)
        switch format {
        case .hex: print(Hex.encode(bytes))
        case .base64: print(Base64.encode(bytes))
        case .base64url: print(Base64URL.encode(bytes))
        case .raw: try Terminal.writeOutput(bytes, to: nil)
        }
    }
}
