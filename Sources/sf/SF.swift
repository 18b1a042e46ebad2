import ArgumentParser
import Foundation
import SecureFoundation

/// `sf`: the SecureFoundation command-line tool. Each subcommand parses its arguments, calls the
/// library, and prints. Exit status: 0 success, 1 the operation failed (message on stderr),
/// 2 usage error.
struct SF: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sf",
        abstract: "SecureFoundation: application-level security tools.",
        version: "0.1.0",
        subcommands: [
            RandomCommand.self,
            HashCommand.self,
            KDFCommand.self,
            SealCommand.self,
            OpenCommand.self,
            KeychainCommand.self,
            VaultCommand.self,
            RecordsCommand.self,
            KeyCommand.self,
            EncryptCommand.self,
            DecryptCommand.self,
            KeygenCommand.self,
            TourCommand.self,
            ChannelCommand.self,
        ]
    )
}

@main
enum Main {
    /// For "Missing value for '--text <text>'" when the next argument starts with `-` (as in
    /// `--text -x`): how to give such a value.
    static func dashValueHint(for message: String, arguments: [String]) -> String? {
        guard message.hasPrefix("Missing value for '--"), let end = message.dropFirst(19).firstIndex(where: { $0 == " " || $0 == "'" })
        else { return nil }
        let option = String(message[message.index(message.startIndex, offsetBy: 19)..<end])
        guard let index = arguments.firstIndex(of: option), index + 1 < arguments.count, arguments[index + 1].hasPrefix("-") else {
            return nil
        }
        return "sf: a value that starts with '-' is read as an option: write \(option)=\(arguments[index + 1])"
    }

    static func main() async {
        Terminal.holdStandardDescriptors()
        // An interrupted -o write leaves no temporary file (with decrypted data) behind.
        TemporaryFiles.removeOnTerminationSignals()
        do {
            var command = try SF.parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = SF.exitCode(for: error)
            if code != .success { NewStoreFile.removeAfterFailure() }
            if code == .success || error is ExitCode {
                SF.exit(withError: error)  // help, version, or an explicit exit code
            } else if code == .validationFailure {
                Terminal.writeError(SF.fullMessage(for: error))
                if let hint = Main.dashValueHint(for: SF.message(for: error), arguments: Array(CommandLine.arguments.dropFirst())) {
                    Terminal.writeError(hint)
                }
                exit(2)
            } else {
                Terminal.writeError("sf: \(error)")
                exit(1)
            }
        }
    }
}
