import ArgumentParser
import Foundation
import SecureFoundation

struct KDFCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kdf",
        abstract: "Derive a key from a passphrase (scrypt or PBKDF2), or calibrate a cost for a target time.",
        discussion: """
            The passphrase is read from --passphrase-file or prompted for without echo; the derived key \
            is printed in hex. `sf kdf --calibrate 500` prints the scrypt cost that takes about 500 ms here.
            """)

    enum Algorithm: String, ExpressibleByArgument, CaseIterable { case scrypt, pbkdf2 }

    @Option(help: "scrypt or pbkdf2 (PBKDF2-HMAC-SHA256).")
    var algorithm: Algorithm = .scrypt
    @Option(help: "scrypt: log2 of N.") var logN: UInt8 = 17
    @Option(help: "scrypt: block size r.") var blockSize: UInt32 = 8
    @Option(help: "scrypt: parallelism p.") var parallelism: UInt32 = 1
    @Option(help: "pbkdf2: iteration count.") var rounds: UInt32 = 600_000
    @Option(help: "Salt in hex (default: 16 random bytes, printed).") var salt: String?
    @Option(help: "Output length in bytes.") var length: Int = 32
    @Option(help: "File whose first line is the passphrase.") var passphraseFile: String?
    @Option(help: "Print the cost that takes about this many milliseconds on this machine, then exit.")
    var calibrate: Int?

    func run() throws {
        if let calibrate {
            let target = Duration.milliseconds(calibrate)
            let kdf = algorithm == .scrypt
                ? try PasswordKDF.calibrateScrypt(target: target) : try PasswordKDF.calibratePBKDF2(target: target)
            print(kdf)
            return
        }
        let kdf: PasswordKDF = algorithm == .scrypt
            ? .scrypt(logN: logN, r: blockSize, p: parallelism) : .pbkdf2(hash: .sha256, rounds: rounds)
        guard (1...1024).contains(length) else { throw ValidationError("--length must be 1...1024") }
        let saltBytes = try salt.map { try Hex.decode($0) } ?? SecureRandom.bytes(count: 16)
        let passphrase = try Terminal.secret(file: passphraseFile, prompt: "Passphrase: ", option: "--passphrase-file")
        let key = try passphrase.withUnsafeBytes { try kdf.deriveKey(from: $0, salt: saltBytes, outputByteCount: length) }
        print("kdf:  \(kdf)")
        print("salt: \(Hex.encode(saltBytes))")
        print("key:  \(key.withUnsafeBytes { Hex.encode($0) })")
    }
}
