import ArgumentParser
import Foundation
import SecureFoundation

/// `sf decrypt`: age-compatible decryption (`age -d`).
struct DecryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt",
        abstract: "Decrypt an age file, binary or armored (flags as in age -d).",
        discussion: """
            Without -i, the file must be passphrase-encrypted: the passphrase is typed at the terminal \
            without echo, or read from the first line of --passphrase-file. With -o, the plaintext file \
            appears only if the whole input authenticated; on standard output, plaintext is streamed \
            as each 64 KiB chunk authenticates and a failure stops the stream with exit status 1.
            """)

    @Option(name: [.customShort("i"), .customLong("identity")], help: "An identity file (repeatable).")
    var identityFiles: [String] = []

    @Option(name: .customLong("passphrase-file"), help: "Read the passphrase from the first line of this file.")
    var passphraseFile: String?

    @Option(name: .customLong("max-work-factor"), help: "Refuse scrypt work factors above this (log2 N).")
    var maxWorkFactor = Age.ScryptIdentity.defaultWorkFactorCeiling

    @Option(name: [.customShort("o"), .customLong("output")], help: "Output file (default: standard output).")
    var output: String?

    @Flag(name: [.customShort("d"), .customLong("decrypt")], help: "Accepted for age compatibility.")
    var decrypt = false

    @Argument(help: "Input file (default: standard input).")
    var input: String?

    func run() throws {
        try Self.decrypt(
            identityFiles: identityFiles, passphraseFile: passphraseFile, maxWorkFactor: maxWorkFactor,
            output: output, input: input)
    }

    /// The decryption shared with `sf encrypt -d`.
    static func decrypt(
        identityFiles: [String], passphraseFile: String?, maxWorkFactor: Int, output: String?, input: String?
    ) throws {
        try AgeCommandSupport.run {
            var identities = [any Age.Identity]()
            var unsupported: AgeError?
            for path in identityFiles {
                do {
                    identities += try Age.parseIdentities(AgeCommandSupport.readText(path))
                } catch let error as AgeError {
                    // An identity of an unsupported type (an ECDSA SSH key) is skipped when others remain.
                    guard case .unsupportedKeyType = error else { throw error }
                    AgeCommandSupport.warn("skipping identity file \(path): \(error)")
                    unsupported = unsupported ?? error
                }
            }
            if identities.isEmpty, let unsupported { throw unsupported }
            if identities.isEmpty || passphraseFile != nil {
                let file = passphraseFile, noIdentity = identities.isEmpty
                identities.append(Age.ScryptIdentity(workFactorCeiling: maxWorkFactor) {
                    try Terminal.secret(
                        file: file, prompt: "Enter passphrase: ",
                        option: noIdentity ? "-i IDENTITY_FILE for a key, or --passphrase-file" : "--passphrase-file")
                })
            }
            let source = try AgeCommandSupport.input(input)
            do {
                try AgeCommandSupport.withOutput(output, binary: false) { sink in
                    try Age.Decryptor(from: source, identities: identities).decrypt(to: sink)
                }
            } catch AgeError.noIdentityMatched where identities.allSatisfy({ $0 is Age.ScryptIdentity }) {
                throw CLIError(identityFiles.isEmpty
                    ? "the passphrase is wrong, or the file is not passphrase-encrypted (then give its identity with -i)"
                    : "the passphrase is wrong, or the file is not passphrase-encrypted")
            }
        }
    }
}
