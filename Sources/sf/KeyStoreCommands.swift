import ArgumentParser
import Foundation
import SecureFoundation

/// The keychain holding keys by tag, and the vault passcode that opens their private keys (the
/// same options as `sf keychain set --secure`).
struct KeyStoreOptions: ParsableArguments {
    @OptionGroup var location: KeychainLocation
    @OptionGroup var vaultPasscode: VaultPasscodeOption
    @Option(help: "Seal and open stored private keys with the passphrase in this file instead of the vault.")
    var keyPassphraseFile: String?

    /// The sealer this command obtained (one command per process): asked for once, and, once
    /// obtained, every key taken by tag is verified with it.
    private static let obtained = Locked<(any ItemSealer)?>(nil)

    /// What seals stored private keys: a passphrase when one is given, else the unlocked vault.
    /// Obtained once per command.
    func sealer(_ keychain: Keychain) throws -> any ItemSealer {
        if let sealer = Self.obtained.withLock({ $0 }) { return sealer }
        let sealer: any ItemSealer
        if let keyPassphraseFile {
            sealer = try PassphraseItemSealer(passphrase: Terminal.readSecret(fromFile: keyPassphraseFile))
        } else {
            guard Vault(keychain: keychain).hasPasscode else {
                throw CLIError("no vault is set up in this keychain to seal private keys: run sf vault init, "
                    + "or give --key-passphrase-file to seal them with a passphrase instead")
            }
            sealer = try vaultPasscode.unlockedVault(keychain)
        }
        Self.obtained.withLock { $0 = sealer }
        return sealer
    }

    /// The key store in the keychain file.
    func open() throws -> KeyStore {
        KeyStore(keychain: try location.open())
    }

    /// The private key under `tag`, opened with the unlocked vault.
    func privateKey(tag: String) throws -> AsymmetricPrivateKey {
        let store = try open()
        _ = try store.publicKey(tag: tag)  // an unknown tag fails before the passcode is asked for
        return try store.privateKey(tag: tag, sealer: sealer(store.keychain))
    }

    /// The public key under `tag`, else the one in the key file `path`. With --passcode-file or
    /// --key-passphrase-file, or once the command has obtained the sealer (a passcode typed at
    /// the prompt for a private key, say), it is verified: a key pair's public half against its
    /// sealed private key, a partner key against its sealed record (one stored without them is
    /// refused). So a key a command trusts as a sender or a recipient is never one that whoever
    /// can write the keychain swapped, wherever the command could check it.
    func publicKey(tag: String?, file path: String?) throws -> AsymmetricPublicKey {
        if let tag {
            let store = try open()
            if vaultPasscode.passcodeFile != nil || keyPassphraseFile != nil || Self.obtained.withLock({ $0 != nil }) {
                return try store.verifiedPublicKey(tag: tag, sealer: sealer(store.keychain))
            }
            return try store.publicKey(tag: tag)
        }
        guard let path else { throw ValidationError("give a key file or --tag") }
        return try KeyFileOptions.publicKey(path)
    }

    /// The private key under `tag`, else the one in the key file `path` (read with `keys`).
    func privateKey(tag: String?, file path: String?, keys: KeyFileOptions) throws -> AsymmetricPrivateKey {
        if let tag { return try privateKey(tag: tag) }
        guard let path else { throw ValidationError("give a key file or --tag") }
        return try keys.privateKey(path)
    }

    /// Runs `body` with the store and the sealer, then closes the keychain (flushing writes).
    func withSealer<R>(_ body: (KeyStore, any ItemSealer) throws -> R) throws -> R {
        let store = try open()
        let result = try body(store, try sealer(store.keychain))
        try store.keychain.close()
        return result
    }
}

/// Exactly one of a key file option and `--tag`.
func requireOne(_ file: String?, _ fileOption: String, tag: String?) throws {
    if (file == nil) == (tag == nil) { throw ValidationError("give either \(fileOption) or --tag") }
}

struct KeyListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the keys in the keychain: tag, type, sha256-spki fingerprint, and pair or partner (--json for JSON).")

    @OptionGroup var location: KeychainLocation

    @Flag(help: "Print a JSON array of {tag, type, fingerprint, kind} objects instead of lines.")
    var json = false

    /// One key of `sf key list --json`.
    struct Row: Encodable {
        let tag: String, type: String, fingerprint: String, kind: String
    }

    func run() throws {
        let rows = try KeyStore(keychain: location.openForReading()).list().map {
            Row(tag: $0.tag, type: $0.type.rawValue, fingerprint: $0.fingerprint.description, kind: $0.hasPrivateKey ? "pair" : "partner")
        }
        if json { return try JSONOutput.print(rows) }
        for row in rows { print("\(PrintableText.escaped(row.tag))\t\(row.type)\t\(row.fingerprint)\t\(row.kind)") }
    }
}

struct KeyDeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete the key under a tag (both items of a key pair, or a partner key).")

    @OptionGroup var location: KeychainLocation
    @Option(help: "The key's tag.") var tag: String

    func run() throws {
        let store = KeyStore(keychain: try location.open())
        try store.delete(tag: tag)
        try store.keychain.close()
    }
}

struct KeyImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Store a key file under a tag: a public key becomes a partner key; a private key is sealed with the vault.",
        discussion: """
            The format is detected (PEM, DER, PKCS#1/8, encrypted PKCS#8, OpenSSH, JWK, raw EC). With \
            --passcode-file (or --key-passphrase-file) a partner key is also authenticated by the vault, \
            which commands given a passcode require; importing the same key again that way authenticates \
            one stored without it.
            """)

    @Option(help: "The tag to store the key under.") var tag: String
    @OptionGroup var keys: KeyFileOptions
    @OptionGroup var store: KeyStoreOptions
    @Argument(help: "The key file.") var file: String

    func run() throws {
        let imported: ImportedKey
        do {
            imported = try KeyImport.key(from: KeyFileOptions.read(file))
        } catch KeyError.passphraseRequired {
            imported = .private(try keys.privateKey(file))
        }
        switch imported {
        case .public(let key) where store.vaultPasscode.passcodeFile != nil || store.keyPassphraseFile != nil:
            // Authenticated by the vault (or passphrase), so commands given a passcode accept it.
            try store.withSealer { try $0.storePartnerKey(key, tag: tag, sealer: $1) }
        case .public(let key):
            let keyStore = try store.open()
            try keyStore.storePartnerKey(key, tag: tag)
            try keyStore.keychain.close()
        case .private(let key):
            try store.withSealer { try $0.storeKeyPair(key, tag: tag, sealer: $1) }
        }
        print("\(imported.publicKey.type) \(imported.publicKey.fingerprint)")
    }
}
