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
    static func main() async {
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
            if code == .success || error is ExitCode {
                SF.exit(withError: error)  // help, version, or an explicit exit code
            } else if code == .validationFailure {
                Terminal.writeError(SF.fullMessage(for: error))
                exit(2)
            } else {
                Terminal.writeError("sf: \(error)")
                exit(1)
            }
        }
    }
}
