import ArgumentParser
import Foundation
import SecureFoundation

struct SealCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seal",
        abstract: "Encrypt and authenticate data into the native envelope (see docs/FORMATS.md).",
        discussion: """
            Reads INPUT (or standard input) and writes the envelope to -o (atomically) or standard output. \
            --stream uses the chunked SFS1 format with bounded memory for inputs of any size. With \
            --stream, a progress bar is drawn on standard error when it is a terminal and INPUT is a \
            file over 64 MiB (never in pipes).
            """)

    enum Algorithm: String, ExpressibleByArgument, CaseIterable { case aes256gcm = "aes-256-gcm", chacha20poly1305 = "chacha20-poly1305" }
    enum KDFName: String, ExpressibleByArgument, CaseIterable { case scrypt, pbkdf2 }

    @OptionGroup var keys: KeyOptions
    @Option(help: "aes-256-gcm (default) or chacha20-poly1305.") var algorithm: Algorithm = .aes256gcm
    @Option(help: "Passphrase KDF: scrypt (default) or pbkdf2.") var kdf: KDFName = .scrypt
    @Option(help: "scrypt log2(N), from \(PasswordKDF.minimumScryptLogN) to \(KDFLimits.default.maxScryptLogN).") var logN: UInt8 = 17
    @Option(help: "PBKDF2 rounds, from \(PasswordKDF.minimumPBKDF2Rounds) to \(KDFLimits.default.maxPBKDF2Rounds).") var rounds: UInt32 = 600_000
    @Option(help: "Context bound to the envelope; the same context is needed to open it.") var context: String?
    @Flag(help: "Write PEM text instead of binary.") var armor = false
    @Flag(help: "Use the chunked SFS1 format (bounded memory, any size).") var stream = false
    @Option(name: .shortAndLong, help: "Output file (written atomically); default standard output.") var output: String?
    @Argument(help: "Input file; default standard input.") var input: String?

    func validate() throws {
        if armor && stream { throw ValidationError("--armor applies to envelopes, not to --stream") }
        // An envelope no default reader would open is refused up front (readers' ceiling: logN 22).
        // Nor one too cheap to guess: the floors are `sf`'s for every password seal.
        let ceiling = KDFLimits.default.maxScryptLogN
        if kdf == .scrypt, !(PasswordKDF.minimumScryptLogN...ceiling).contains(logN) {
            throw ValidationError("--log-n must be \(PasswordKDF.minimumScryptLogN)...\(ceiling) (cheaper is too cheap to guess; readers refuse more by default)")
        }
        if kdf == .pbkdf2, !(PasswordKDF.minimumPBKDF2Rounds...KDFLimits.default.maxPBKDF2Rounds).contains(rounds) {
            throw ValidationError(
                "--rounds must be \(PasswordKDF.minimumPBKDF2Rounds)...\(KDFLimits.default.maxPBKDF2Rounds) (fewer are too cheap to guess; readers refuse more by default)")
        }
    }

    func run() throws {
        let algorithm: Envelope.Algorithm = self.algorithm == .aes256gcm ? .aes256GCM : .chaCha20Poly1305
        let passphraseKDF: PasswordKDF = kdf == .scrypt ? .scrypt(logN: logN, r: 8, p: 1) : .pbkdf2(hash: .sha256, rounds: rounds)
        let material = try keys.material(confirmPrompt: true)
        let contextBytes = Data((context ?? "").utf8)
        if stream {
            AgeCommandSupport.keepFreedMemory()  // the same STREAM engine as `sf encrypt`, the same allocator tuning
            let source = try input.map { try FileInput(path: $0) } ?? Terminal.standardInput()
            try ProgressBar.following(descriptor: source.descriptor, input: input) {
                try withOutput(output) { sink in
                    switch material {
                    case .key(let key):
                        try StreamEnvelope.encrypt(from: source, to: sink, key: key, algorithm: algorithm, context: contextBytes)
                    case .passphrase(let passphrase):
                        try passphrase.withUnsafeBytes { secret in
                            try StreamEnvelope.encrypt(
                                from: source, to: sink, passphrase: secret, kdf: passphraseKDF, algorithm: algorithm,
                                context: contextBytes)
                        }
                    }
                }
            }
            return
        }
        let plaintext = try Terminal.readInput(input)
        var sealed: Data
        switch material {
        case .key(let key):
            sealed = try Envelope.seal(plaintext, key: key, algorithm: algorithm, context: contextBytes)
        case .passphrase(let passphrase):
            sealed = try passphrase.withUnsafeBytes {
                try Envelope.seal(plaintext, passphrase: $0, kdf: passphraseKDF, algorithm: algorithm, context: contextBytes)
            }
        }
        if armor { sealed = Data(Envelope.armor(sealed).utf8) }
        try Terminal.writeOutput(sealed, to: output)
    }
}

struct OpenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Decrypt and verify an envelope (binary, armored, or chunked SFS1), or a legacy iMAS blob.",
        discussion: """
            Nothing is written unless the whole envelope verifies; for SFS1 streams written to standard \
            output, chunks are written as each one verifies (use -o for all-or-nothing output). A \
            progress bar is drawn on standard error when it is a terminal and INPUT is a file over 64 MiB \
            (never in pipes).
            """)

    @OptionGroup var keys: KeyOptions
    @Option(help: "The context given when sealing.") var context: String?
    @Option(help: "Highest scrypt log2(N) accepted from the input (default 22).") var maxLogN: UInt8 = 22
    @Option(help: "Input is legacy iMAS IMSCryptoUtilsEncryptData output; its PBKDF2 salt in hex.")
    var legacyImasSalt: String?
    @Option(name: .shortAndLong, help: "Output file (written atomically); default standard output.") var output: String?
    @Argument(help: "Input file; default standard input.") var input: String?

    func run() throws {
        let limits = KDFLimits(maxScryptLogN: maxLogN)
        let contextBytes = Data((context ?? "").utf8)
        let material = try keys.material(confirmPrompt: false)
        if let legacyImasSalt {
            guard case .passphrase(let passphrase) = material else { throw ValidationError("legacy iMAS data needs a passphrase") }
            let salt = try Hex.decode(legacyImasSalt)
            let key = try passphrase.withUnsafeBytes { try LegacyIMAS.deriveKey(password: $0, salt: salt) }
            try Terminal.writeOutput(try LegacyIMAS.decrypt(try Terminal.readInput(input), key: key), to: output)
            return
        }
        let source = try input.map { try FileInput(path: $0) } ?? Terminal.standardInput()
        let encoding = SealedDataEncoding.detect(try source.peek(SealedDataEncoding.prefixLength))
        if encoding == .stream {
            AgeCommandSupport.keepFreedMemory()  // the same STREAM engine as `sf decrypt`, the same allocator tuning
            try ProgressBar.following(descriptor: source.descriptor, input: input) {
                try withOutput(output) { sink in
                    switch material {
                    case .key(let key): try StreamEnvelope.decrypt(from: source, to: sink, key: key, context: contextBytes)
                    case .passphrase(let passphrase):
                        try passphrase.withUnsafeBytes {
                            try StreamEnvelope.decrypt(from: source, to: sink, passphrase: $0, context: contextBytes, limits: limits)
                        }
                    }
                }
            }
            return
        }
        var sealed = try ProgressBar.following(descriptor: source.descriptor, input: input) { try Terminal.readAll(source) }
        if encoding == .armoredEnvelope { sealed = try Envelope.dearmor(String(decoding: sealed, as: UTF8.self)) }
        let plaintext: Data
        switch material {
        case .key(let key): plaintext = try Envelope.open(sealed, key: key, context: contextBytes)
        case .passphrase(let passphrase):
            plaintext = try passphrase.withUnsafeBytes { try Envelope.open(sealed, passphrase: $0, context: contextBytes, limits: limits) }
        }
        try Terminal.writeOutput(plaintext, to: output)
    }
}

/// Runs `body` with standard output, or with `path` under the library's output policy
/// (`OutputDestination`: a file atomically, a device or pipe in place).
func withOutput(_ path: String?, _ body: (borrowing FileOutput) throws -> Void) throws {
    if let path, path != "-" {
        try OutputDestination.write(to: path, body)
    } else {
        try body(FileOutput(descriptor: 1, name: "standard output"))
    }
}

