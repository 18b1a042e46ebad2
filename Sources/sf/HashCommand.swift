import ArgumentParser
import Foundation
import SecureFoundation

struct HashCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hash",
        abstract: "Print the digest of files or standard input, in `sha256sum` format.")

    @Option(name: .shortAndLong, help: "sha256, sha384 or sha512; sha1 and md5 only for legacy checks.")
    var algorithm: String = "sha256"

    @Option(help: "Print an HMAC keyed by the contents of this file instead of a plain digest.")
    var hmacKeyFile: String?

    @Argument(help: "Files to hash; none or `-` for standard input.")
    var files: [String] = []

    func validate() throws {
        guard HashFunction(name: algorithm) != nil else { throw ValidationError("unknown algorithm \(algorithm)") }
    }

    func run() throws {
        let function = HashFunction(name: algorithm)!
        // The whole file is the key (binary keys may contain newlines).
        let key = try hmacKeyFile.map { SecretBytes(try Terminal.readAll(FileInput(path: $0))) }
        var lines = ""
        for file in files.isEmpty ? ["-"] : files {
            let digest: Data
            if let key {
                digest = MessageAuthentication.hmac(try Terminal.readInput(file), key: key, with: function)
            } else if file == "-" {
                digest = try Hashing.hash(reading: FileHandle.standardInput, with: function)
            } else {
                digest = try Hashing.hash(fileAt: file, with: function)
            }
            lines += "\(Hex.encode(digest))  \(file)\n"
        }
        // Printed only once every input was read, so a failure leaves stdout empty.
        print(lines, terminator: "")
    }
}
