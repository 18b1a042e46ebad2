import ArgumentParser
import SecureFoundation

/// `sf`: the SecureFoundation command-line tool. Each subcommand parses its arguments, calls the
/// library, and prints; exit status 0 on success, 1 when the operation fails, 2 on a usage error.
@main
struct SF: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sf",
        abstract: "SecureFoundation: application-level security tools.",
        version: "0.1.0",
        subcommands: [
            RandomCommand.self,
            EncryptCommand.self, DecryptCommand.self, KeygenCommand.self,
        ]
    )
}
