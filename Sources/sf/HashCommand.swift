import ArgumentParser
import Foundation
import SecureFoundation

struct HashCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hash",
        abstract: "Print the digest of files or standard input, in `sha256sum` format; -c checks such lines.",
        discussion: """
            With -c, each FILE (or standard input) holds lines `<hex digest>  <name>` (or `<hex> *<name>`) as \
            sha256sum writes them; each named file is hashed with -a and reported as `<name>: OK` or \
            `<name>: FAILED` (`FAILED open or read` when it cannot be read). Lines starting with # and \
            empty lines are ignored; other malformed lines are counted in a warning. The exit status is \
            1 when any file fails, cannot be read, or no line was well formed, as with coreutils.
            """)

    @Option(name: .shortAndLong, help: "sha256, sha384 or sha512; sha1 and md5 only for legacy checks.")
    var algorithm: String = "sha256"

    @Option(help: "Print an HMAC keyed by every byte of this file (not empty, at most 1 MiB) instead of a plain digest.")
    var hmacKeyFile: String?

    @Flag(name: [.customShort("c"), .customLong("check")], help: "Read digests from the FILEs and check them (sha256sum -c).")
    var check = false

    @Argument(help: "Files to hash (with -c: checksum files); none or `-` for standard input.")
    var files: [String] = []

    func validate() throws {
        guard HashFunction(name: algorithm) != nil else { throw ValidationError("unknown algorithm \(algorithm)") }
        if check, hmacKeyFile != nil { throw ValidationError("-c checks plain digests; it cannot be used with --hmac-key-file") }
    }

    func run() throws {
        let function = HashFunction(name: algorithm)!
        if check { return try HashCheck(function: function).run(files.isEmpty ? ["-"] : files) }
        let key = try hmacKeyFile.map(Self.readHMACKey)
        var lines = ""
        for file in files.isEmpty ? ["-"] : files {
            let digest: Data
            if let key {
                digest = MessageAuthentication.hmac(try Terminal.readInput(file), key: key, with: function)
            } else if file == "-" {
                try Terminal.takeStandardInput(for: "the input")
                digest = try Hashing.hash(reading: FileHandle.standardInput, with: function)
            } else {
                digest = try Hashing.hash(fileAt: file, with: function)
            }
            lines += HashCheck.line(Hex.encode(digest), file, forTerminal: isatty(1) == 1)
        }
        // Printed only once every input was read, so a failure leaves stdout empty.
        print(lines, terminator: "")
    }

    /// The whole file at `path` as the key (binary keys may contain newlines), within the key-file
    /// ceiling; an empty file is refused, since an HMAC under an empty key authenticates nothing.
    static func readHMACKey(_ path: String) throws -> SecretBytes {
        var bytes = try Terminal.readKeyFile(FileInput(path: path), kind: "a key file", limit: Terminal.maximumKeyFile)
        defer { bytes.resetBytes(in: 0..<bytes.count) }
        guard !bytes.isEmpty else { throw CLIError("\(path): the HMAC key file is empty") }
        return SecretBytes(bytes)
    }
}

/// `sf hash -c`: checks `sha256sum`-style lines, with coreutils' messages and exit status.
struct HashCheck {
    let function: HashFunction

    func run(_ checksumFiles: [String]) throws {
        var failed = 0, unreadable = 0, malformed = 0, checked = 0
        for list in checksumFiles {
            let text = String(decoding: try Terminal.readInput(list), as: UTF8.self)
            // Split on LF bytes (in Swift "\r\n" is one Character), then drop a CR before the LF.
            for raw in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
                let bytes = raw.last == UInt8(ascii: "\r") ? raw.dropLast() : raw[...]
                let line = Substring(String(decoding: bytes, as: UTF8.self))
                if line.isEmpty || line.hasPrefix("#") { continue }
                guard let (expected, name) = parse(line) else {
                    malformed += 1
                    continue
                }
                checked += 1
                let digest: Data
                do {
                    digest = name == "-" ? try Hashing.hash(reading: FileHandle.standardInput, with: function)
                        : try Hashing.hash(fileAt: name, with: function)
                } catch {
                    print("\(Terminal.printable(name)): FAILED open or read")
                    unreadable += 1
                    continue
                }
                // Names come from the list, which whoever wrote it chose: shown escaped.
                if Hex.encode(digest) == expected {
                    print("\(Terminal.printable(name)): OK")
                } else {
                    print("\(Terminal.printable(name)): FAILED")
                    failed += 1
                }
            }
        }
        if malformed > 0 {
            Terminal.writeError("sf: WARNING: \(malformed) line\(malformed == 1 ? " is" : "s are") improperly formatted")
        }
        if unreadable > 0 {
            Terminal.writeError("sf: WARNING: \(unreadable) listed file\(unreadable == 1 ? "" : "s") could not be read")
        }
        if failed > 0 {
            Terminal.writeError("sf: WARNING: \(failed) computed checksum\(failed == 1 ? "" : "s") did NOT match")
        }
        if checked == 0 {
            Terminal.writeError("sf: no properly formatted \(function) checksum lines found")
        }
        if failed > 0 || unreadable > 0 || checked == 0 { throw ExitCode.failure }
    }

    /// The checksum line of `name` (with its newline), as coreutils writes it: a name holding a
    /// backslash, LF or CR is written `\\`, `\n`, `\r` on a line that starts with a backslash. On a
    /// terminal, the name is shown with every character that could act on it escaped
    /// (`PrintableText`; a display, not a list to check).
    static func line(_ hex: String, _ name: String, forTerminal: Bool) -> String {
        if forTerminal {
            let shown = Terminal.printable(name)
            return (shown == name ? "" : "\\") + "\(hex)  \(shown)\n"
        }
        guard name.contains(where: { $0 == "\\" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) else { return "\(hex)  \(name)\n" }
        var escaped = ""
        for scalar in name.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return "\\\(hex)  \(escaped)\n"
    }

    /// `<hex>  <name>` or `<hex> *<name>`, with a digest of the algorithm's length, or the same
    /// after a backslash with the name escaped (`line`); nil otherwise.
    private func parse(_ line: Substring) -> (String, String)? {
        guard line.first == "\\" else { return parseUnescaped(line) }
        guard let (hex, escaped) = parseUnescaped(line.dropFirst()), let name = Self.unescaped(escaped) else { return nil }
        return (hex, name)
    }

    /// `<hex>  <name>` or `<hex> *<name>`, the name as it stands.
    private func parseUnescaped(_ line: Substring) -> (String, String)? {
        let hexLength = Hashing.hash(Data(), with: function).count * 2
        guard line.count > hexLength + 2 else { return nil }
        let hex = line.prefix(hexLength).lowercased()
        let rest = line.dropFirst(hexLength)
        guard hex.allSatisfy(\.isHexDigit), rest.first == " ", let mode = rest.dropFirst().first, mode == " " || mode == "*" else {
            return nil
        }
        let name = String(rest.dropFirst(2))
        return name.isEmpty ? nil : (hex, name)
    }

    /// A name escaped as coreutils does (`\\`, `\n`, `\r`); nil for another escape.
    private static func unescaped(_ name: String) -> String? {
        var result = ""
        var scalars = name.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            guard scalar == "\\" else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalars.next() {
            case "\\": result += "\\"
            case "n": result += "\n"
            case "r": result += "\r"
            default: return nil
            }
        }
        return result
    }
}
