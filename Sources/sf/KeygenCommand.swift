import ArgumentParser
import Foundation
import SecureFoundation

/// `sf keygen`: generates an age X25519 identity, as `age-keygen` does.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Generate an age identity (flags as in age-keygen).",
        discussion: """
            Writes a new identity file (created date, public key comment, AGE-SECRET-KEY-1… line) to -o \
            (created with mode 0600, refusing to overwrite) or standard output, and prints the public key \
            on stderr when writing to a file. With -y, prints the recipients of an identity file instead.
            """)

    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the identity to this new file.")
    var output: String?

    @Flag(name: .customShort("y"), help: "Convert an identity file (INPUT or standard input) to recipients.")
    var convert = false

    @Argument(help: "With -y: the identity file (default: standard input).")
    var input: String?

    func run() throws {
        try AgeCommandSupport.run {
            if convert {
                let identities = try Age.parseIdentities(AgeCommandSupport.readText(input ?? "-"))
                var lines = ""
                for identity in identities {
                    guard let convertible = identity as? any RecipientConvertible,
                        let text = (convertible.recipientForEncryption as? any CustomStringConvertible)?.description
                    else { throw CLIError("an identity in the file has no printable recipient") }
                    lines += text + "\n"
                }
                try emit(lines, to: output)
                return
            }
            if input != nil { throw ValidationError("an input file is only accepted with -y") }
            let identity = Age.X25519Identity()
            let created = ISO8601DateFormatter().string(from: Date())
            let text = "# created: \(created)\n# public key: \(identity.recipient.string)\n\(identity.secretString)\n"
            if let output {
                do {
                    try OutputDestination.write(Data(text.utf8), to: output, permissions: 0o600, overwrite: false)
                } catch SecureCoreError.fileExists {
                    throw CLIError("\(output) exists; refusing to overwrite an identity file")
                }
                FileHandle.standardError.write(Data("Public key: \(identity.recipient.string)\n".utf8))
            } else {
                print(text, terminator: "")
            }
        }
    }

    private func emit(_ text: String, to path: String?) throws {
        if let path { try OutputDestination.write(Data(text.utf8), to: path, permissions: 0o644) } else { print(text, terminator: "") }
    }
}
