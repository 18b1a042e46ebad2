import ArgumentParser
import Foundation
import SecureFoundation

/// `sf encrypt`: age-compatible encryption (`age -e`); with `-d`, decryption as `age -d`.
struct EncryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encrypt",
        abstract: "Encrypt a file in the age format (flags as in age).",
        discussion: """
            Encrypts INPUT (or standard input) to the given recipients or to a passphrase. The output \
            (-o) is written atomically; without -o it goes to standard output. Passphrases are typed \
            at the terminal without echo, or read from the first line of --passphrase-file.
            """)

    @Option(name: [.customShort("r"), .customLong("recipient")], help: "An age1..., age1pq1..., ssh-ed25519 or ssh-rsa recipient (repeatable).")
    var recipients: [String] = []

    @Option(name: [.customShort("R"), .customLong("recipients-file")], help: "A file of recipients, one per line (repeatable).")
    var recipientFiles: [String] = []

    @Option(name: [.customShort("i"), .customLong("identity")], help: "Encrypt to the recipient of this identity file (repeatable).")
    var identityFiles: [String] = []

    @Flag(name: [.customShort("p"), .customLong("passphrase")], help: "Encrypt with a passphrase (scrypt).")
    var passphrase = false

    @Option(name: .customLong("passphrase-file"), help: "Read the passphrase from the first line of this file (implies -p).")
    var passphraseFile: String?

    @Option(name: .customLong("work-factor"), help: "scrypt work factor (log2 N) for -p, from \(PasswordKDF.minimumScryptLogN) to \(Age.ScryptIdentity.defaultWorkFactorCeiling).")
    var workFactor = Age.ScryptRecipient.defaultWorkFactor

    @Flag(name: [.customShort("a"), .customLong("armor")], help: "Write PEM-armored ASCII.")
    var armor = false

    @Option(name: [.customShort("o"), .customLong("output")], help: "Output file (default: standard output).")
    var output: String?

    @Flag(name: [.customShort("e"), .customLong("encrypt")], help: "Encrypt (the default; accepted for age compatibility).")
    var encrypt = false

    @Flag(name: [.customShort("d"), .customLong("decrypt")], help: "Decrypt instead, as `sf decrypt` (age compatibility).")
    var decrypt = false

    @Argument(help: "Input file (default: standard input).")
    var input: String?

    func validate() throws {
        let ceiling = Age.ScryptIdentity.defaultWorkFactorCeiling
        // The floor is `sf`'s for every password seal (scrypt log2(N) as --log-n's).
        if !(Int(PasswordKDF.minimumScryptLogN)...ceiling).contains(workFactor) {
            throw ValidationError("--work-factor must be \(PasswordKDF.minimumScryptLogN)...\(ceiling) (cheaper is too cheap to guess; age readers refuse more by default)")
        }
    }

    func run() throws {
        if decrypt {
            if !recipients.isEmpty || !recipientFiles.isEmpty || armor || passphrase {
                throw ValidationError("-r, -R, -a and -p cannot be used with -d")
            }
            return try DecryptCommand.decrypt(
                identityFiles: identityFiles, passphraseFile: passphraseFile,
                maxWorkFactor: Age.ScryptIdentity.defaultWorkFactorCeiling, output: output, input: input)
        }
        try AgeCommandSupport.run {
            let usesPassphrase = passphrase || passphraseFile != nil
            var all = [any Age.Recipient]()
            for text in recipients { all.append(try Age.parseRecipient(text)) }
            for path in recipientFiles {
                // Lines of unsupported key types (ecdsa-sha2-…) are skipped with a warning naming the line, when other recipients remain.
                var skipped = [Age.SkippedKey]()
                all += try Age.parseRecipients(AgeCommandSupport.readText(path), skippingUnsupported: &skipped)
                for key in skipped { AgeCommandSupport.warn("skipping \(path) line \(key.line): \(key.reason)") }
            }
            for path in identityFiles {
                for identity in try Age.parseIdentities(AgeCommandSupport.readText(path)) {
                    guard let recipient = Age.recipient(of: identity) else {
                        throw ValidationError("the identity in \(path) cannot be turned into a recipient")
                    }
                    all.append(recipient)
                }
            }
            if usesPassphrase {
                guard all.isEmpty else { throw ValidationError("-p cannot be combined with recipients") }
                let secret = try Terminal.secret(file: passphraseFile, prompt: "Enter passphrase: ", confirm: true, option: "--passphrase-file")
                all.append(try Age.ScryptRecipient(passphrase: secret, workFactor: workFactor))
            }
            guard !all.isEmpty else { throw ValidationError("give at least one of -r, -R, -i or -p") }
            let source = try AgeCommandSupport.input(input)
            try AgeCommandSupport.withOutput(output, binary: !armor) { sink in
                try Age.Encryptor(recipients: all, to: sink, armored: armor).encrypt(from: source)
            }
        }
    }
}
