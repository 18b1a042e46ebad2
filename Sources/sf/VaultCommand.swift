import ArgumentParser
import Foundation
import SecureFoundation

/// `sf vault`: the crypto manager (one application key behind a passcode and security questions).
struct VaultCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vault",
        abstract: "Manage the vault: an application key behind a passcode and security questions.",
        subcommands: [
            VaultInitCommand.self, VaultStatusCommand.self, VaultChangePasscodeCommand.self,
            VaultChangeQuestionsCommand.self, VaultRecoverCommand.self, VaultEncryptCommand.self,
            VaultDecryptCommand.self, VaultRotateCommand.self, VaultRetireKeyCommand.self,
        ]
    )
}

/// The passcode of an existing vault: `--passcode-file` (first line) or a prompt without echo.
struct VaultPasscodeOption: ParsableArguments {
    @Option(help: "File whose first line is the vault passcode (default: prompt).") var passcodeFile: String?

    func read() throws -> SecretBytes {
        try Terminal.secret(file: passcodeFile, prompt: "Vault passcode: ", option: "--passcode-file")
    }

    /// Opens the vault in `keychain` and unlocks it with the passcode.
    func unlockedVault(_ keychain: Keychain) throws -> Vault {
        let vault = Vault(keychain: keychain)
        try vault.requireSetUp()
        try vault.unlock(passcode: try read())
        return vault
    }
}

/// Questions and answers, from files (one per line) or prompted.
struct VaultQuestionsOptions: ParsableArguments {
    @Option(help: "File with one security question per line (default: prompt).") var questionsFile: String?
    @Option(help: "File with one answer per line, in the order of the questions (default: prompt).") var answersFile: String?

    func read() throws -> (questions: [String], answers: [String]) {
        let questions = try questionsFile.map(SecurityQuestionsFile.read) ?? VaultFiles.promptQuestions()
        let answers = try answersFile.map(SecurityQuestionsFile.read) ?? VaultFiles.promptAnswers(to: questions)
        return (questions, answers)
    }
}

/// The new passcode for init, change-passcode and recover.
struct VaultNewPasscodeOption: ParsableArguments {
    @Option(help: "File whose first line is the new passcode (default: prompt twice).") var newPasscodeFile: String?

    func read(prompt: String = "New vault passcode: ") throws -> SecretBytes {
        try Terminal.secret(file: newPasscodeFile, prompt: prompt, confirm: true, option: "--new-passcode-file")
    }
}

enum VaultFiles {
    /// The answers to `questions`, each prompted for without echo.
    static func promptAnswers(to questions: [String]) throws -> [String] {
        try questions.map { question in
            try Terminal.readSecret(prompt: "\(Terminal.printable(question)) ", alternative: "--answers-file").withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// Questions typed on standard input, one per line, ended by an empty line.
    static func promptQuestions() throws -> [String] {
        Terminal.writeError("Security questions, one per line; an empty line ends the list:")
        var questions: [String] = []
        while let line = readLine(), !line.allSatisfy(\.isWhitespace) { questions.append(line) }
        guard !questions.isEmpty else { throw ValidationError("no security questions given; use --questions-file") }
        return questions
    }
}

struct VaultInitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init", abstract: "Set up the vault: a passcode and security questions with their answers.")

    @OptionGroup var location: KeychainLocation
    @Option(help: "File whose first line is the passcode (default: prompt twice).") var passcodeFile: String?
    @OptionGroup var questions: VaultQuestionsOptions
    @OptionGroup var scrypt: ScryptCostOption

    func run() throws {
        let passcode = try Terminal.secret(file: passcodeFile, prompt: "New vault passcode: ", confirm: true, option: "--passcode-file")
        let (questions, answers) = try self.questions.read()
        let keychain = try location.open()
        let vault = Vault(keychain: keychain, configuration: .init(kdf: scrypt.kdf))
        try vault.setUp(passcode: passcode, questions: questions, answers: answers)
        try keychain.close()
        print("vault set up\(location.path.map { " in \($0)" } ?? "") with \(questions.count) security question\(questions.count == 1 ? "" : "s")")
    }
}

struct VaultStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show whether the vault is set up (no secret needed).")

    @OptionGroup var location: KeychainLocation

    @Flag(help: "Print one JSON object {set_up, security_questions, current_key_id, key_ids, failed_attempts}.")
    var json = false

    /// `sf vault status --json`; the members after `setUp` are absent when the vault is not set up.
    struct Status: Encodable {
        let setUp: Bool
        var securityQuestions: [String]?, currentKeyId: UInt32?, keyIds: [UInt32]?, failedAttempts: Int?
    }

    func run() throws {
        let vault = Vault(keychain: try location.openForReading())
        switch try vault.setUpStatus() {
        case .notSetUp:
            if json { return try JSONOutput.print(Status(setUp: false)) }
            print("vault: not set up")
            return
        case .corrupt(let reason):
            throw VaultError.corruptState(reason)
        case .setUp:
            break
        }
        guard let keys = vault.keyIds else { throw VaultError.notSetUp }
        if json {
            return try JSONOutput.print(Status(
                setUp: true, securityQuestions: vault.securityQuestions, currentKeyId: keys.current, keyIds: keys.all,
                failedAttempts: vault.failedAttempts))
        }
        print("vault: set up")
        print("security questions: \(vault.securityQuestions.count)")
        for question in vault.securityQuestions { print("  \(Terminal.printable(question))") }
        print("current key id: \(keys.current) (\(keys.all.count) key\(keys.all.count == 1 ? "" : "s"))")
        print("failed attempts: \(vault.failedAttempts)")
    }
}

struct VaultChangePasscodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "change-passcode", abstract: "Change the passcode (the key and data are unchanged).")

    @OptionGroup var location: KeychainLocation
    @OptionGroup var passcode: VaultPasscodeOption
    @OptionGroup var newPasscode: VaultNewPasscodeOption

    func run() throws {
        let keychain = try location.open()
        let vault = try passcode.unlockedVault(keychain)
        try vault.updatePasscode(try newPasscode.read())
        try keychain.close()
    }
}

struct VaultChangeQuestionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "change-questions", abstract: "Replace the security questions and answers.")

    @OptionGroup var location: KeychainLocation
    @OptionGroup var passcode: VaultPasscodeOption
    @OptionGroup var questions: VaultQuestionsOptions

    func run() throws {
        let keychain = try location.open()
        let vault = try passcode.unlockedVault(keychain)
        let (questions, answers) = try self.questions.read()
        try vault.updateSecurityQuestionsAndAnswers(questions: questions, answers: answers)
        try keychain.close()
    }
}

struct VaultRecoverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover", abstract: "Unlock with the security answers and set a new passcode.")

    @OptionGroup var location: KeychainLocation
    @Option(help: "File with one answer per line (default: prompt).") var answersFile: String?
    @OptionGroup var newPasscode: VaultNewPasscodeOption

    func run() throws {
        let keychain = try location.open()
        let vault = Vault(keychain: keychain)
        try vault.requireSetUp()
        let answers = try answersFile.map(SecurityQuestionsFile.read) ?? VaultFiles.promptAnswers(to: vault.securityQuestions)
        try vault.unlock(answers: answers)
        try vault.updatePasscode(try newPasscode.read())
        try keychain.close()
    }
}

/// Input, output and context shared by encrypt and decrypt.
struct VaultDataOptions: ParsableArguments {
    @Option(help: "Context bound to the sealed data; the same context is needed to decrypt.") var context: String?
    @Option(name: .shortAndLong, help: "Output file (written atomically); default standard output.") var output: String?
    @Argument(help: "Input file; default standard input.") var input: String?
}

struct VaultEncryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "encrypt", abstract: "Seal data with the application key (SFV1).")

    @OptionGroup var location: KeychainLocation
    @OptionGroup var passcode: VaultPasscodeOption
    @OptionGroup var data: VaultDataOptions

    func run() throws {
        let plaintext = try Terminal.readInput(data.input)
        let vault = try passcode.unlockedVault(try location.open())
        try Terminal.writeOutput(try vault.encrypt(plaintext, context: Data((data.context ?? "").utf8)), to: data.output)
    }
}

struct VaultDecryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "decrypt", abstract: "Open data sealed with `sf vault encrypt`.")

    @OptionGroup var location: KeychainLocation
    @OptionGroup var passcode: VaultPasscodeOption
    @OptionGroup var data: VaultDataOptions

    func run() throws {
        let sealed = try Terminal.readInput(data.input)
        let vault = try passcode.unlockedVault(try location.open())
        try Terminal.writeOutput(try vault.decrypt(sealed, context: Data((data.context ?? "").utf8)), to: data.output)
    }
}

struct VaultRotateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate", abstract: "Make a new application key current and re-seal every sealed keychain item (passwords and keys).")

    @OptionGroup var location: KeychainLocation
    @OptionGroup var passcode: VaultPasscodeOption

    func run() throws {
        let keychain = try location.open()
        let vault = try passcode.unlockedVault(keychain)
        let rotation = try vault.rotateKey()
        let behind = vault.holders().filter { $0.keyIds != [rotation.keyId] }
        try keychain.close()
        print("current key id: \(rotation.keyId); re-sealed \(rotation.resealed) secure item(s), skipped \(rotation.skipped)")
        // Stores keep their wrapped keys themselves, out of the vault's reach: say which to re-wrap.
        for holder in behind {
            print("not re-wrapped (outside the keychain): \(PrintableText.escaped(holder.location)), under key id \(holder.keyIds.map(String.init).joined(separator: ", ")); "
                + "run sf records rewrap --vault there")
        }
    }
}

struct VaultRetireKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retire-key",
        abstract: "Remove an old application key for good (refused while it is current, seals keychain items, or wraps a records store's keys).",
        discussion: """
            Records stores opened with --vault are remembered with the key ids that wrap their store keys;             while one still uses the key, retiring it is refused (re-wrap with sf records rewrap --vault,             or give --force to retire anyway: those stores' sealed fields then no longer open).             Data sealed with `sf vault encrypt` under that key can no longer be decrypted afterwards.
            """)

    @OptionGroup var location: KeychainLocation
    @OptionGroup var passcode: VaultPasscodeOption
    @Option(help: "The application key id to retire (see sf vault status).") var keyId: UInt32
    @Flag(help: "Retire the key even though records stores last seen still use it (they become unreadable).") var force = false

    func run() throws {
        let keychain = try location.open()
        let vault = try passcode.unlockedVault(keychain)
        let held = vault.holders(using: keyId)
        try vault.retireKey(keyId, force: force)
        try keychain.close()
        for holder in held {
            Terminal.writeError("warning: \(PrintableText.escaped(holder.location)) still wrapped its keys under key id \(keyId): its sealed fields no longer open")
        }
        print("retired key id \(keyId)")
    }
}
