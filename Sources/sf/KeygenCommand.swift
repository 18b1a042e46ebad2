import ArgumentParser
import Foundation
import SecureFoundation

/// `sf keygen`: generates an age X25519 identity, or with `--pq` a hybrid post-quantum
/// (ML-KEM-768 + X25519) identity, as `age-keygen` and `age-keygen -pq` (age 1.3) do.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Generate an age identity (flags as in age-keygen).",
        discussion: """
            Writes a new identity file (created date, public key comment, AGE-SECRET-KEY-1... line) to -o \
            (created with mode 0600, refusing to overwrite) or standard output, and prints the public key \
            on stderr when writing to a file. With --pq, the identity is post-quantum hybrid \
            (AGE-SECRET-KEY-PQ-1..., recipient age1pq1...), as age-keygen -pq writes it. With -y, prints the \
            recipients of an identity file instead.
            """)

    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the identity to this new file.")
    var output: String?

    @Flag(name: .customShort("y"), help: "Convert an identity file (INPUT or standard input) to recipients.")
    var convert = false

    @Flag(name: [.customLong("pq"), .customLong("pq", withSingleDash: true)],
          help: "Generate a post-quantum hybrid identity (ML-KEM-768 + X25519, age1pq1... recipient).")
    var postQuantum = false

    @Argument(help: "With -y: the identity file (default: standard input).")
    var input: String?

    func run() throws {
        try AgeCommandSupport.run {
            if convert {
                if postQuantum { throw ValidationError("--pq generates a new identity; it cannot be used with -y") }
                if let output, let input, Terminal.isSameFile(input, output) {
                    throw CLIError("\(output) is the identity file read: the recipients written there would replace the identity")
                }
                let identities = try Age.parseIdentities(AgeCommandSupport.readText(input ?? "-"))
                var lines = ""
                for identity in identities {
                    guard let text = (Age.recipient(of: identity) as? any CustomStringConvertible)?.description
                    else { throw CLIError("an identity in the file has no printable recipient") }
                    lines += text + "\n"
                }
                try emit(lines, to: output)
                return
            }
            if input != nil { throw ValidationError("an input file is only accepted with -y") }
            let (publicKey, secret) = try newIdentity()
            let created = ISO8601DateFormatter().string(from: Date())
            let text = "# created: \(created)\n# public key: \(publicKey)\n\(secret)\n"
            if let output {
                do {
                    try OutputDestination.write(Data(text.utf8), to: output, permissions: 0o600, overwrite: false)
                } catch SecureCoreError.fileExists {
                    throw CLIError("\(output) exists; refusing to overwrite an identity file")
                } catch {
                    throw error
                }
                Terminal.writeError("Public key: \(publicKey)")
            } else {
                print(text, terminator: "")
            }
        }
    }

    /// A new identity: its recipient string and its secret string.
    private func newIdentity() throws -> (publicKey: String, secret: String) {
        if postQuantum {
            guard #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *) else {
                throw CLIError("post-quantum identities need a newer operating system")
            }
            let identity = try Age.HybridIdentity()
            return (identity.recipient.description, identity.secretString)
        }
        let identity = Age.X25519Identity()
        return (identity.recipient.string, identity.secretString)
    }

    private func emit(_ text: String, to path: String?) throws {
        if let path { try OutputDestination.write(Data(text.utf8), to: path, permissions: 0o644) } else { print(text, terminator: "") }
    }
}
