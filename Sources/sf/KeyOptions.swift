import ArgumentParser
import Crypto
import Foundation
import SecureFoundation

/// Where the key of `sf seal` / `sf open` comes from: a key file, a passphrase file, or a prompt.
struct KeyOptions: ParsableArguments {
    @Option(help: "File holding a 32-byte key: raw bytes, or 64 hex digits (as `sf random` prints).")
    var keyFile: String?

    @Option(help: "File whose first line is the passphrase (otherwise it is prompted for without echo).")
    var passphraseFile: String?

    func validate() throws {
        if keyFile != nil, passphraseFile != nil {
            throw ValidationError("use either --key-file or --passphrase-file, not both")
        }
    }

    enum Material {
        case key(SymmetricKey)
        case passphrase(SecretBytes)
    }

    /// The key or passphrase; prompts on the terminal when neither file is given.
    func material(confirmPrompt: Bool) throws -> Material {
        if let keyFile { return .key(try Self.readKeyFile(keyFile)) }
        return .passphrase(try Terminal.secret(
            file: passphraseFile, prompt: "Passphrase: ", confirm: confirmPrompt, option: "--passphrase-file or --key-file"))
    }

    static func readKeyFile(_ path: String) throws -> SymmetricKey {
        try SymmetricKeyFile.read(path: path).symmetricKey
    }
}
