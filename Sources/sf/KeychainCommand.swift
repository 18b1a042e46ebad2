import ArgumentParser
import Foundation
import SecureFoundation

/// `sf keychain`: passwords by service and account in a SecureFoundation keychain file.
struct KeychainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keychain",
        abstract: "Store and read passwords by service and account in a keychain file.",
        subcommands: [
            KeychainSetCommand.self, KeychainGetCommand.self, KeychainDeleteCommand.self, KeychainListCommand.self,
            KeychainImportLegacyCommand.self,
        ]
    )
}

/// The keychain file option shared by the keychain subcommands.
struct KeychainLocation: ParsableArguments {
    @Option(
        name: .customLong("keychain"),
        help: "Keychain file (default: $SF_HOME/keychain.db, else $XDG_DATA_HOME/securefoundation/keychain.db).")
    var path: String?

    func open() throws -> Keychain {
        try Keychain(path: path ?? Keychain.defaultPath())
    }

    /// Opens for a command that only reads: nothing is created or converted (a missing file or an
    /// empty database reads as an empty keychain), and the file is never written.
    func openForReading() throws -> Keychain {
        try Keychain(path: path ?? Keychain.defaultPath(), configuration: .readOnly)
    }
}

/// Service, account and access group naming one password.
struct KeychainItemName: ParsableArguments {
    @Option(help: "Service name.") var service: String
    @Option(help: "Account name.") var account: String
    @Option(help: "Access group (default: the default group).") var accessGroup: String = ""
}

struct KeychainSetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Store a password, read from standard input or prompted without echo.",
        discussion: """
            Standard input is stored as it is, except for one trailing newline (LF or CRLF), which is \
            removed; with --raw nothing is removed, so any bytes (binary values too) are stored exactly, \
            as `sf keychain get --raw` writes them back.
            """)

    @OptionGroup var location: KeychainLocation
    @OptionGroup var name: KeychainItemName
    @Flag(help: "Seal the password with the vault's application key (needs the vault passcode).") var secure = false
    @OptionGroup var vaultPasscode: VaultPasscodeOption
    @Flag(help: "Store an empty password (otherwise empty input is refused and nothing is stored).") var allowEmpty = false
    @Flag(help: "Store standard input exactly, without removing a trailing newline.") var raw = false

    func run() throws {
        let password = try readPassword()
        // An empty value is almost always a mistake (an unset variable, a closed pipe): refuse it
        // before the keychain is opened, so nothing changes.
        guard !password.isEmpty || allowEmpty else {
            throw CLIError("the password is empty; nothing was stored (use --allow-empty to store an empty password)")
        }
        let keychain = try location.open()
        if secure {
            let vault = try vaultPasscode.unlockedVault(keychain)
            try keychain.setSecurePassword(
                password, service: name.service, account: name.account, accessGroup: name.accessGroup, sealer: vault)
        } else {
            do {
                try keychain.setPassword(password, service: name.service, account: name.account, accessGroup: name.accessGroup)
            } catch {
                // (Matched inside the catch: a pattern on the catch clause crashes Swift 6.3's SIL verifier here.)
                guard case .protectionMismatch(_, _, isSealed: true) = error else { throw error }
                throw CLIError(
                    "the item for service '\(name.service)' and account '\(name.account)' is sealed; "
                        + "use --secure to replace it (its value is never stored in clear)")
            }
        }
        try keychain.close()
    }

    /// Standard input when it is not a terminal (one trailing newline removed unless `--raw`), else a
    /// prompt without echo.
    private func readPassword() throws -> Data {
        if isatty(0) == 1 {
            if raw { throw ValidationError("--raw reads standard input; redirect the value from a file or pipe") }
            let secret = try Terminal.readSecret(
                prompt: "Password for \(name.service) / \(name.account): ", alternative: "standard input")
            return secret.withUnsafeBytes { Data($0) }
        }
        let password = try Terminal.readInput(nil)
        return raw ? password : Terminal.droppingFinalLineEnding(password)
    }
}

struct KeychainGetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Print a password.",
        discussion: """
            A value that is UTF-8 text is printed followed by a newline. With --raw the exact stored \
            bytes are written, with no newline added. A value that is not UTF-8 text (binary data) is \
            never written to a terminal: redirected to a file or pipe it is written exactly (as with \
            --raw); on a terminal it is refused and nothing is printed.
            """)

    @OptionGroup var location: KeychainLocation
    @OptionGroup var name: KeychainItemName
    @Flag(help: "Open a password sealed with the vault (needs the vault passcode).") var secure = false
    @OptionGroup var vaultPasscode: VaultPasscodeOption
    @Flag(help: "Write the exact stored bytes, without adding a newline.") var raw = false

    func run() throws {
        // Opening a sealed value unlocks the vault, which records failed attempts when it can.
        let keychain = try secure ? location.open() : location.openForReading()
        let password: Data
        do {
            password = secure
                ? try keychain.securePasswordData(
                    service: name.service, account: name.account, accessGroup: name.accessGroup,
                    sealer: try vaultPasscode.unlockedVault(keychain))
                : try keychain.passwordData(service: name.service, account: name.account, accessGroup: name.accessGroup)
        } catch KeychainError.protectionMismatch(let service, let account, let isSealed) {
            // Say which flag fixes it.
            throw CLIError(isSealed
                ? "the item for service '\(service)' and account '\(account)' is sealed with the vault: add --secure"
                : "the item for service '\(service)' and account '\(account)' is not sealed: drop --secure")
        }
        try Terminal.writeOutput(Self.output(for: password, raw: raw, toTerminal: isatty(1) == 1), to: nil)
    }

    /// What `get` writes for `value`: text gets a newline unless `raw`; a value that is not UTF-8 is
    /// written exactly, and refused when standard output is a terminal (it would be mangled there).
    static func output(for value: Data, raw: Bool, toTerminal: Bool) throws -> Data {
        // Decoding replaces every invalid sequence with U+FFFD, so only valid UTF-8 survives unchanged.
        let isText = value.elementsEqual(String(decoding: value, as: UTF8.self).utf8)
        if !isText && toTerminal {
            throw CLIError(
                "the value is binary (not UTF-8 text) and is never written to a terminal; "
                    + "use --raw and redirect standard output to a file or pipe")
        }
        return raw || !isText ? value : value + Data("\n".utf8)
    }
}

struct KeychainDeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete the password of one account (never the service's other accounts).")

    @OptionGroup var location: KeychainLocation
    @OptionGroup var name: KeychainItemName

    func run() throws {
        let keychain = try location.open()
        try keychain.deletePassword(service: name.service, account: name.account, accessGroup: name.accessGroup)
        try keychain.close()
    }
}

struct KeychainListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List services and accounts (never values).")

    @OptionGroup var location: KeychainLocation
    @Option(help: "Only this service.") var service: String?
    @Option(help: "Only this access group (default: all).") var accessGroup: String?
    @Flag(help: "Print JSON: an array of items with their attributes and dates.") var json = false

    /// One listed item; the value is never included.
    struct Entry: Encodable {
        let accessGroup, service, account: String
        let label, comment: String?
        let created, modified: Date
        let sealed: Bool
    }

    func run() throws {
        let keychain = try location.openForReading()
        let items = keychain.items(matching: KeychainQuery(accessGroup: accessGroup, service: service))
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            let entries = items.map {
                Entry(
                    accessGroup: $0.identity.accessGroup, service: $0.identity.service, account: $0.identity.account,
                    label: $0.attributes.label, comment: $0.attributes.comment, created: $0.creationDate,
                    modified: $0.modificationDate, sealed: $0.isSealed)
            }
            print(JSONOutput.terminalSafe(String(decoding: try encoder.encode(entries), as: UTF8.self)))
        } else {
            // Names come from the file, which anyone who can write it chooses: no control characters reach the terminal.
            for item in items { print("\(PrintableText.escaped(item.identity.service))\t\(PrintableText.escaped(item.identity.account))") }
        }
    }
}

struct KeychainImportLegacyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-legacy", abstract: "Import an iMAS keychain file (property list: service -> account -> data).")

    @OptionGroup var location: KeychainLocation
    @Argument(help: "The legacy keychain file.") var file: String
    @Flag(help: "Replace passwords that already exist (default: keep them).") var overwrite = false

    func run() throws {
        let contents = try Terminal.readAll(FileInput(path: file))
        let keychain = try location.open()
        let summary = try keychain.importLegacy(contents, overwrite: overwrite)
        try keychain.close()
        print("imported \(summary.imported), skipped \(summary.skipped)")
    }
}
