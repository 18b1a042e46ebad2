import ArgumentParser
import Foundation
import SecureFoundation

extension KeyType: ExpressibleByArgument {}
extension KeyExportFormat: ExpressibleByArgument {}
extension SignatureScheme: ExpressibleByArgument {}

/// `sf key`: key pairs, formats, hybrid encryption and signatures (SecureKeys). Keys live in files,
/// or in the keychain by tag (`--tag`, private keys sealed with the vault).
struct KeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Generate, convert, encrypt to, and sign with asymmetric keys (RSA, P-256/384/521, Ed25519, X25519).",
        subcommands: [
            KeyGenerateCommand.self, KeyExportCommand.self, KeyFingerprintCommand.self, KeyEncryptCommand.self,
            KeyDecryptCommand.self, KeySignCommand.self, KeyVerifyCommand.self, KeyListCommand.self, KeyImportCommand.self,
            KeyDeleteCommand.self,
        ])
}

/// Reading key files given on the command line.
struct KeyFileOptions: ParsableArguments {
    @Option(help: "File with the passphrase of an encrypted private key (first line); prompted for otherwise.")
    var passphraseFile: String?

    /// The whole key file at `path`, at most `Terminal.maximumKeyFile` bytes (the one way `sf key`
    /// reads a key file).
    static func read(_ path: String) throws -> Data {
        try Terminal.readKeyFile(FileInput(path: path), kind: "a key file", limit: Terminal.maximumKeyFile)
    }

    /// The private key in `path`, asking for the passphrase when the key is encrypted.
    func privateKey(_ path: String) throws -> AsymmetricPrivateKey {
        let data = try Self.read(path)
        do {
            return try KeyImport.privateKey(from: data, passphrase: passphraseFile.map(Terminal.readSecret(fromFile:)))
        } catch KeyError.passphraseRequired {
            let passphrase = try Terminal.readSecret(prompt: "Passphrase for \(path): ", alternative: "--passphrase-file")
            return try KeyImport.privateKey(from: data, passphrase: passphrase)
        }
    }

    /// The public key in `path` (or the public half of a private key there).
    static func publicKey(_ path: String) throws -> AsymmetricPublicKey {
        try KeyImport.publicKey(from: Self.read(path))
    }
}

struct KeyGenerateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Generate a key pair into a PKCS#8 PEM file (encrypted with --passphrase-file), or into the keychain under --tag (private key sealed with the vault), and print its fingerprint.",
        discussion: "rsa1024 exists only for talking to legacy Heimdall apps.")

    @Option(help: "rsa2048, rsa3072, rsa4096, p256, p384, p521, ed25519, x25519 (or legacy rsa1024).")
    var type: KeyType
    @Option(help: "Private key file to create (atomically, mode 0600; an existing file is kept unless --force).")
    var out: String?
    @Option(help: "Store the key pair in the keychain under this tag instead of a file.") var tag: String?
    @OptionGroup var store: KeyStoreOptions
    @Option(help: "Also write the public key (SPKI PEM) here (an existing file is kept unless --force).")
    var publicOut: String?
    @Flag(help: "Replace existing --out and --public-out files.") var force = false
    @Option(help: "Encrypt the private key (PKCS#8 PBES2, AES-256-CBC) with the passphrase in this file.")
    var passphraseFile: String?

    func validate() throws {
        try requireOne(out, "--out", tag: tag)
        if tag != nil, passphraseFile != nil { throw ValidationError("--passphrase-file applies to --out; --tag seals with the vault") }
        // One file for both halves would hold the public key over the private one: refused before anything is written.
        if let out, let publicOut, FilePaths.resolved(out) == FilePaths.resolved(publicOut) {
            throw ValidationError("--out and --public-out name the same file")
        }
    }


    func run() throws {
        // Refuse before any work when an output exists (the writes below refuse again, atomically).
        if !force {
            for path in [out, publicOut].compactMap({ $0 }) {
                var status = stat()
                if lstat(path, &status) == 0 { throw Self.exists(path) }
            }
        }
        let key = try AsymmetricPrivateKey.generate(type)
        do {
            // All or nothing: the public key first (a new file is simply removed again), so that a
            // failure leaves neither a private key file nor a stored key pair without it.
            var createdPublicOut = false
            if let publicOut {
                var status = stat()
                let existed = lstat(publicOut, &status) == 0
                try OutputDestination.write(
                    try key.publicKey.exported(as: .spkiPEM), to: publicOut, permissions: 0o644, overwrite: force)
                // Only a file this run made where nothing was is removed: never a device, a link
                // or a file `--force` replaced.
                createdPublicOut = !existed
            }
            do {
                if let tag {
                    try store.withSealer { try $0.storeKeyPair(key, tag: tag, sealer: $1) }
                } else if let out {
                    let passphrase = try passphraseFile.map(Terminal.readSecret(fromFile:))
                    let encoded = try key.exported(as: passphrase == nil ? .pkcs8 : .pkcs8Encrypted, passphrase: passphrase)
                    try encoded.withUnsafeBytes { try OutputDestination.write($0, to: out, overwrite: force) }
                }
            } catch {
                if createdPublicOut, let publicOut { unlink(publicOut) }
                throw error
            }
        } catch SecureCoreError.fileExists(let path) {
            throw Self.exists(path)
        }
        print("\(type) \(key.publicKey.fingerprint)")
    }

    private static func exists(_ path: String) -> CLIError {
        CLIError("\(path) exists; refusing to overwrite a key file (use --force to replace it)")
    }
}

struct KeyExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Convert a key file (any supported format, detected), or a key in the keychain, to another format.",
        discussion: """
            The pkcs8 formats export the private key (with --tag, it needs the vault passcode); the \
            others the public key, unless --private asks jwk, pkcs1 or pkcs1-der for the private key. \
            The output is never the --in file.
            """)

    @Option(name: .customLong("in"), help: "Key file (PEM, DER, OpenSSH, JWK, ...).") var input: String?
    @Option(help: "The key stored under this tag instead of a file.") var tag: String?
    @OptionGroup var store: KeyStoreOptions
    @Option(help: "spki-pem, spki-der, pkcs1, pkcs1-der, pkcs8, pkcs8-der, pkcs8-encrypted, openssh, jwk, x963.")
    var format: KeyExportFormat
    @Option(help: "For pkcs8-encrypted: file with the new passphrase.") var newPassphraseFile: String?
    @OptionGroup var keys: KeyFileOptions
    @Option(name: .shortAndLong, help: "Output file (written atomically); default standard output.") var output: String?
    @Flag(name: .customLong("private"), help: "Export the private key in jwk, pkcs1 or pkcs1-der (they export the public key otherwise).")
    var exportPrivate = false

    func validate() throws {
        try requireOne(input, "--in", tag: tag)
        if format == .pkcs8Encrypted, newPassphraseFile == nil {
            throw ValidationError("pkcs8-encrypted needs --new-passphrase-file")
        }
        if exportPrivate, ![.jwk, .pkcs1, .pkcs1DER].contains(format) {
            throw ValidationError("--private applies to jwk, pkcs1 and pkcs1-der (the pkcs8 formats are private already)")
        }
    }

    /// Whether the export holds the private key.
    private var exportsPrivateKey: Bool { format.isPrivate || exportPrivate }

    func run() throws {
        if let output, let input, Terminal.isSameFile(input, output) {
            throw CLIError("\(output) is the key file read (--in): write the export elsewhere")
        }
        if let tag {
            if exportsPrivateKey {
                try writePrivate(store.privateKey(tag: tag))
            } else {
                try Terminal.writeOutput(try store.publicKey(tag: tag, file: nil).exported(as: format), to: output)
            }
            return
        }
        guard let input else { throw ValidationError("give --in or --tag") }
        let data = try KeyFileOptions.read(input)
        let publicOnly: AsymmetricPublicKey?
        do {
            publicOnly = try KeyImport.key(from: data).publicKeyIfPublic
        } catch .passphraseRequired {
            publicOnly = nil
        } catch {
            throw error
        }
        if let publicOnly {
            try Terminal.writeOutput(try publicOnly.exported(as: format), to: output)
            return
        }
        let privateKey = try keys.privateKey(input)
        if exportsPrivateKey {
            try writePrivate(privateKey)
        } else {
            try Terminal.writeOutput(try privateKey.publicKey.exported(as: format), to: output)
        }
    }

    private func writePrivate(_ key: AsymmetricPrivateKey) throws {
        let passphrase = try newPassphraseFile.map(Terminal.readSecret(fromFile:))
        try key.exported(as: format, passphrase: passphrase).withUnsafeBytes { try Terminal.writeOutput(Data($0), to: output) }
    }
}

extension ImportedKey {
    fileprivate var publicKeyIfPublic: AsymmetricPublicKey? {
        if case .public(let key) = self { key } else { nil }
    }
}

struct KeyFingerprintCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fingerprint",
        abstract: "Print a key's type, its sha256-spki:<hex> fingerprint and, where OpenSSH has one, its OpenSSH SHA256:<base64> fingerprint.")

    @Argument(help: "Key file, public or private (any supported format).") var file: String
    @OptionGroup var keys: KeyFileOptions
    @Flag(help: "Print one JSON object {type, fingerprint, openssh_fingerprint} instead of a line.") var json = false

    /// `sf key fingerprint --json`; `opensshFingerprint` is absent for key types OpenSSH lacks.
    struct Output: Encodable {
        let type: String, fingerprint: String, opensshFingerprint: String?
    }

    func run() throws {
        let data = try KeyFileOptions.read(file)
        let key: AsymmetricPublicKey
        do {
            key = try KeyImport.publicKey(from: data)
        } catch .wrongKeyType, .passphraseRequired {
            // An encrypted private key: its passphrase from --passphrase-file, else a prompt.
            key = try keys.privateKey(file).publicKey
        } catch {
            throw error
        }
        if json {
            return try JSONOutput.print(Output(type: key.type.rawValue, fingerprint: key.fingerprint.description,
                                               opensshFingerprint: key.openSSHFingerprint))
        }
        print(([key.type.rawValue, key.fingerprint.description] + [key.openSSHFingerprint].compactMap { $0 }).joined(separator: " "))
    }
}

struct KeyEncryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encrypt",
        abstract: "Encrypt data to a public key (native SFK1 hybrid format; see docs/FORMATS.md).",
        discussion: """
            --from authenticates the sender (HPKE auth mode, or an RSA-PSS signature inside the encryption); \
            the recipient then decrypts with --from SENDER_PUBLIC_KEY. --heimdall writes the LEGACY Heimdall \
            payload as base64 text, for existing iOS apps only.
            """)

    @Option(help: "Recipient public key file.") var to: String?
    @Option(help: "Recipient: the key stored under this tag (key pair or partner) instead of --to.") var tag: String?
    @OptionGroup var store: KeyStoreOptions
    @Option(help: "Sender private key file (authenticated mode).") var from: String?
    @Option(help: "Sender: the key pair stored under this tag instead of --from.") var fromTag: String?
    @Flag(help: "LEGACY: Heimdall payload (RSA only), base64 text.") var heimdall = false
    @Flag(help: "With --heimdall: Heimdall's URL-safe base64.") var urlSafe = false
    @OptionGroup var keys: KeyFileOptions
    @Option(name: .shortAndLong, help: "Output file (written atomically); default standard output.") var output: String?
    @Argument(help: "Input file; default standard input.") var input: String?

    func validate() throws {
        try requireOne(to, "--to", tag: tag)
        if from != nil, fromTag != nil { throw ValidationError("give --from or --from-tag, not both") }
        if heimdall, from != nil || fromTag != nil { throw ValidationError("--heimdall has no sender authentication; drop --from") }
        if urlSafe, !heimdall { throw ValidationError("--url-safe applies to --heimdall") }
    }

    func run() throws {
        // The sender's key first: opening a stored one unlocks the vault (or the passphrase), and
        // the recipient's stored key is then verified with it.
        let sender = from != nil || fromTag != nil ? try store.privateKey(tag: fromTag, file: from, keys: keys) : nil
        let recipient = try store.publicKey(tag: tag, file: to)
        let message = try Terminal.readInput(input)
        if heimdall {
            guard case .rsa(let rsa) = recipient else { throw KeyError.wrongKeyType(expected: "an RSA key", found: recipient.type.rawValue) }
            let text = Heimdall.encodeBase64(try Heimdall.encrypt(message, to: rsa), urlSafe: urlSafe)
            try Terminal.writeOutput(Data((text + "\n").utf8), to: output)
            return
        }
        let sealed = try sender.map { try HybridEncryption.encrypt(message, to: recipient, from: $0) }
            ?? HybridEncryption.encrypt(message, to: recipient)
        try Terminal.writeOutput(sealed, to: output)
    }
}

struct KeyDecryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt",
        abstract: "Decrypt an SFK1 message (or, with --heimdall, a LEGACY Heimdall base64 payload) with a private key.",
        discussion: "Nothing is written unless the whole message decrypts and authenticates.")

    @Option(help: "Private key file.") var key: String?
    @Option(help: "The key pair stored under this tag instead of --key (needs the vault passcode).") var tag: String?
    @OptionGroup var store: KeyStoreOptions
    @Option(help: "Expected sender's public key file (for sender-authenticated messages).") var from: String?
    @Option(help: "Expected sender: the key stored under this tag (pair or partner) instead of --from.") var fromTag: String?
    @Flag(help: "LEGACY: the input is a Heimdall payload in base64 text (either variant).") var heimdall = false
    @OptionGroup var keys: KeyFileOptions
    @Option(name: .shortAndLong, help: "Output file (written atomically); default standard output.") var output: String?
    @Argument(help: "Input file; default standard input.") var input: String?

    func validate() throws {
        try requireOne(key, "--key", tag: tag)
        if from != nil, fromTag != nil { throw ValidationError("give --from or --from-tag, not both") }
        if heimdall, from != nil || fromTag != nil { throw ValidationError("--heimdall has no sender authentication; drop --from") }
    }

    func run() throws {
        let privateKey = try store.privateKey(tag: tag, file: key, keys: keys)
        let message = try Terminal.readInput(input)
        let plaintext: Data
        if heimdall {
            guard case .rsa(let rsa) = privateKey else { throw KeyError.wrongKeyType(expected: "an RSA key", found: privateKey.type.rawValue) }
            // Refused by its size before the text is copied and decoded (several copies of a huge input).
            try Heimdall.checkEncodedPayloadLength(message.count, for: rsa.publicKey)
            plaintext = try Heimdall.decrypt(Heimdall.decodePayload(String(decoding: message, as: UTF8.self), for: rsa.publicKey), with: rsa)
        } else if from != nil || fromTag != nil {
            plaintext = try HybridEncryption.decrypt(message, with: privateKey, from: store.publicKey(tag: fromTag, file: from))
        } else {
            plaintext = try HybridEncryption.decrypt(message, with: privateKey)
        }
        try Terminal.writeOutput(plaintext, to: output)
    }
}

struct KeySignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign data; prints the signature in base64 (as Heimdall returns it), or raw bytes with --binary.",
        discussion: "Default schemes: RSA-PSS-SHA256, ECDSA (DER), Ed25519. --heimdall: RSASSA-PKCS1-v1_5/SHA-256, LEGACY sizes allowed.")

    @Option(help: "Private key file.") var key: String?
    @Option(help: "The key pair stored under this tag instead of --key (needs the vault passcode).") var tag: String?
    @OptionGroup var store: KeyStoreOptions
    @Option(help: "rsa-pss-sha256, rsa-pss-sha384, rsa-pss-sha512, rsa-pkcs1v15-sha256, ecdsa-der, ecdsa-raw, ed25519.") var scheme: SignatureScheme?
    @Flag(help: "LEGACY Heimdall signature (RSA PKCS#1 v1.5 SHA-256).") var heimdall = false
    @Flag(help: "With --heimdall: Heimdall's URL-safe base64.") var urlSafe = false
    @Flag(help: "Write the raw signature bytes instead of base64.") var binary = false
    @OptionGroup var keys: KeyFileOptions
    @Option(name: .shortAndLong, help: "Signature file (written atomically); default standard output.") var output: String?
    @Argument(help: "Input file; default standard input.") var input: String?

    func validate() throws {
        try requireOne(key, "--key", tag: tag)
        if heimdall, scheme != nil { throw ValidationError("--heimdall fixes the scheme; drop --scheme") }
        if urlSafe, binary { throw ValidationError("--url-safe applies to base64 output") }
    }

    func run() throws {
        let privateKey = try store.privateKey(tag: tag, file: key, keys: keys)
        let message = try Terminal.readInput(input)
        let signature: Data
        if heimdall {
            guard case .rsa(let rsa) = privateKey else { throw KeyError.wrongKeyType(expected: "an RSA key", found: privateKey.type.rawValue) }
            signature = try Heimdall.sign(message, with: rsa)
        } else {
            signature = try privateKey.signature(for: message, scheme: scheme)
        }
        let output = binary ? signature : Data((Heimdall.encodeBase64(signature, urlSafe: urlSafe) + "\n").utf8)
        try Terminal.writeOutput(output, to: self.output)
    }
}

struct KeyVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify a detached signature (base64 text in either Heimdall variant, or raw bytes). Exit 0 when valid, 1 otherwise.")

    @Option(help: "Public (or private) key file.") var key: String?
    @Option(help: "The key stored under this tag (key pair or partner) instead of --key.") var tag: String?
    @OptionGroup var store: KeyStoreOptions
    @Option(help: "Signature file.") var signature: String
    @Option(help: "rsa-pss-sha256, rsa-pss-sha384, rsa-pss-sha512, rsa-pkcs1v15-sha256, ecdsa-der, ecdsa-raw, ed25519.") var scheme: SignatureScheme?
    @Flag(help: "LEGACY Heimdall signature (RSA PKCS#1 v1.5 SHA-256).") var heimdall = false
    @Argument(help: "Input file; default standard input.") var input: String?

    static let maximumSignatureFile = 64 << 10

    func validate() throws {
        try requireOne(key, "--key", tag: tag)
        if heimdall, scheme != nil { throw ValidationError("--heimdall fixes the scheme; drop --scheme") }
    }

    func run() throws {
        let publicKey = try store.publicKey(tag: tag, file: key)
        // Signatures are at most a few hundred bytes (base64 of RSA-4096 is 684); a larger file is
        // refused before it is decoded.
        let signatureFile = try FileInput(path: signature).read(upTo: Self.maximumSignatureFile + 1)
        guard signatureFile.count <= Self.maximumSignatureFile else {
            throw CLIError("\(signature): too large for a signature (over \(Self.maximumSignatureFile >> 10) KiB)")
        }
        let signatureBytes = (try? Heimdall.decodeBase64(String(decoding: signatureFile, as: UTF8.self))) ?? signatureFile
        let message = try Terminal.readInput(input)
        if heimdall {
            guard case .rsa(let rsa) = publicKey else { throw KeyError.wrongKeyType(expected: "an RSA key", found: publicKey.type.rawValue) }
            guard Heimdall.verify(signatureBytes, for: message, with: rsa) else { throw KeyError.invalidSignature }
        } else {
            try publicKey.verify(signatureBytes, for: message, scheme: scheme)
        }
        print("signature valid: \(publicKey.type) \(publicKey.fingerprint)")
    }
}
