#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ArgumentParser
import Foundation
import SecureFoundation

/// Terminal and standard-stream helpers shared by the commands.
enum Terminal {
    /// Whether paths `a` and `b` name one existing file (the same device and inode), however spelled.
    static func isSameFile(_ a: String, _ b: String) -> Bool {
        var first = stat(), second = stat()
        return stat(a, &first) == 0 && stat(b, &second) == 0 && first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    /// Writes a line to standard error.
    static func writeError(_ message: String) {
        writeToStandardError(message.hasSuffix("\n") ? message : message + "\n")
    }

    /// Opens /dev/null on whichever of the standard descriptors (0, 1, 2) is closed (`2>&-`), as
    /// OpenSSH does: otherwise the next file opened would take that number, and a line meant for
    /// standard error (or output meant for standard output) would go into that file.
    static func holdStandardDescriptors() {
        for descriptor in STDIN_FILENO...STDERR_FILENO where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            let opened = open("/dev/null", descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY)
            if opened >= 0, opened != descriptor {
                dup2(opened, descriptor)
                close(opened)
            }
        }
    }

    /// Writes `text` to standard error as it is. A standard error that is closed, or fails,
    /// loses the text and nothing else: the command goes on, and exits with its own status
    /// (Foundation's `FileHandle.write(_:)` traps on any error instead).
    static func writeToStandardError(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }

    /// `text` from another party (a name or TXT value heard on the network), safe to print
    /// (`PrintableText.escaped`).
    static func printable(_ text: String) -> String { PrintableText.escaped(text) }

    /// True when standard error is a terminal (for prompts and progress).
    static var stderrIsTerminal: Bool { isatty(2) == 1 }

    /// Reads a secret from the controlling terminal with echo off. Throws when there is no terminal:
    /// secrets are never taken from the command line, so scripts use a file option instead.
    static func readSecret(prompt: String, confirm: Bool = false, alternative: String) throws -> SecretBytes {
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard tty >= 0 else {
            // An operation failure (exit 1), not a usage error: the command line itself was fine.
            throw CLIError("no terminal to prompt for a secret; use \(alternative)")
        }
        defer { close(tty) }
        let first = try readLineWithoutEcho(tty, prompt: prompt)
        if confirm {
            let second = try readLineWithoutEcho(tty, prompt: "Confirm: ")
            guard first == second else { throw CLIError("the two entries do not match") }
        }
        guard first.count > 0 else { throw CLIError("empty secret") }
        return first
    }

    private static func readLineWithoutEcho(_ tty: Int32, prompt: String) throws -> SecretBytes {
        _ = prompt.withCString { write(tty, $0, strlen($0)) }
        var saved = termios()
        let hasTermios = tcgetattr(tty, &saved) == 0
        let restore: @Sendable () -> Void = { [saved] in
            var saved = saved
            if hasTermios { tcsetattr(tty, TCSAFLUSH, &saved) }
            _ = write(tty, "\n", 1)
        }
        // Echo comes back however the prompt ends: returning, throwing, or Ctrl-C (which ends the
        // process by the signal, so no `defer` would run): the restore is registered before echo
        // goes off, and runs before it is unregistered.
        return TemporaryFiles.whileRunning(onTerminationSignal: restore) {
            defer { restore() }
            if hasTermios {
                var silent = saved
                silent.c_lflag &= ~tcflag_t(ECHO)
                tcsetattr(tty, TCSAFLUSH, &silent)
            }
            // Read straight into zeroizing storage so no copy of the secret outlives this call.
            var length = 0
            let line = SecretBytes(count: 4096) { buffer in
                while length < buffer.count {
                    var byte: UInt8 = 0
                    let n = read(tty, &byte, 1)
                    if n < 0, errno == EINTR { continue }
                    if n <= 0 || byte == UInt8(ascii: "\n") { break }
                    buffer[length] = byte
                    length += 1
                }
            }
            return line.withUnsafeBytes { SecretBytes(UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
        }
    }

    /// Reads a secret from a file: its first line, without its line ending (`SecretFile`, the
    /// rule of age and the ssh tools). A file that is standard input (`/dev/stdin`, a pipe's
    /// `/dev/fd/0`) takes it (`takeStandardInput`).
    static func readSecret(fromFile path: String) throws -> SecretBytes {
        if isStandardInput(path) { try takeStandardInput(for: "a secret (\(printable(path)))") }
        return try SecretFile.read(path: path)
    }

    /// What standard input was taken for, once something read it.
    private static let standardInputUse = Locked<String?>(nil)

    /// Claims standard input for `purpose`; throws when something else in this command took it
    /// already (a secret read from it buffers more than its line, so the data after it would be
    /// lost, and the output made of the rest: age refuses the same).
    static func takeStandardInput(for purpose: String) throws {
        let taken = standardInputUse.withLock { use -> String? in
            defer { if use == nil { use = purpose } }
            return use
        }
        if let taken, taken != purpose {
            throw CLIError("standard input is used for \(taken) and for \(purpose): give one of them as a file")
        }
    }

    /// Standard input as the command's input, once claimed for `purpose`.
    static func standardInput(for purpose: String = "the input") throws -> FileInput {
        try takeStandardInput(for: purpose)
        return FileInput(descriptor: 0, name: "standard input")
    }

    /// Whether `path` names this process's standard input (the same open file, as `/dev/stdin`
    /// and `/dev/fd/0` do, or the same pipe or file).
    static func isStandardInput(_ path: String) -> Bool {
        if path == "-" { return true }
        var input = stat(), named = stat()
        return fstat(0, &input) == 0 && stat(path, &named) == 0 && input.st_dev == named.st_dev && input.st_ino == named.st_ino
    }

    /// The one way every `--…-file` secret option is read: the first line of `file` when given,
    /// else a prompt without echo (twice when `confirm`); without a terminal, the error names
    /// `option`, the way to give the secret instead.
    static func secret(file: String?, prompt: String, confirm: Bool = false, option: String) throws -> SecretBytes {
        if let file { return try readSecret(fromFile: file) }
        return try readSecret(prompt: prompt, confirm: confirm, alternative: option)
    }

    /// The largest input read whole into memory (1 GiB). Larger inputs are refused with "input too
    /// large" instead of failing an allocation; the streaming commands (`sf seal --stream`,
    /// `sf encrypt`/`decrypt`) have no such limit.
    static let maximumInput = 1 << 30

    /// All of standard input, or of the file at `path` (`-` or nil for standard input); refuses
    /// inputs over `maximumInput` (a regular file by its size, before reading).
    static func readInput(_ path: String?) throws -> Data {
        if let path, path != "-" { return try readAll(FileInput(path: path)) }
        return try readAll(standardInput())
    }

    /// What remains of `input`, refusing more than `maximumInput` bytes (a regular file by its
    /// size, before reading).
    static func readAll(_ input: borrowing FileInput) throws -> Data {
        do throws(SecureCoreError) {
            return try input.readToEnd(limit: maximumInput)
        } catch .inputTooLarge {
            throw tooLarge(input.path)
        }
    }

    /// The largest key file `sf key` reads (1 MiB). The largest key it takes, an RSA-4096 private
    /// key as encrypted PKCS#8 PEM, JWK or OpenSSH, is under 4 KiB.
    static let maximumKeyFile = 1 << 20

    /// The largest age recipients or identity file `sf encrypt`, `sf decrypt` and `sf keygen -y`
    /// read (16 MiB). The most recipients a file can be encrypted to, 1,024, take at most about
    /// 3 MiB as lines (16,384-bit ssh-rsa keys); the rest is room for comments.
    static let maximumAgeKeyFile = 16 << 20

    /// What remains of `input`, a file that holds keys (`kind`, for example "a key file"),
    /// refusing more than `limit` bytes while reading (a regular file by its size, before reading;
    /// a pipe as soon as it passes the limit), with an error naming the file and the limit.
    static func readKeyFile(_ input: borrowing FileInput, kind: String, limit: Int) throws -> Data {
        // Standard input named as a key file takes it, as a secret file does.
        if input.path != "standard input", isStandardInput(input.path) { try takeStandardInput(for: "\(kind) (\(printable(input.path)))") }
        do throws(SecureCoreError) {
            return try input.readToEnd(limit: limit)
        } catch .inputTooLarge {
            throw CLIError("\(input.path): too large for \(kind) (over \(limit >> 20) MiB)")
        }
    }

    /// `data` without one final line ending, LF or CR LF (a CR not followed by LF is part of the
    /// value): a value typed into a file or piped by `echo` means the line, not its ending.
    static func droppingFinalLineEnding(_ data: Data) -> Data {
        var data = data
        if data.last == UInt8(ascii: "\n") {
            data.removeLast()
            if data.last == UInt8(ascii: "\r") { data.removeLast() }
        }
        return data
    }

    private static func tooLarge(_ name: String) -> CLIError {
        CLIError("\(name): input too large (over \(maximumInput >> 20) MiB in memory); for big files use sf seal --stream or sf encrypt")
    }

    /// Writes `data` to standard output, or to `path` under the library's output policy
    /// (`OutputDestination`: a file atomically, a device or pipe in place).
    static func writeOutput(_ data: Data, to path: String?) throws {
        if let path, path != "-" {
            try OutputDestination.write(data, to: path)
        } else {
            try FileOutput(descriptor: 1, name: "standard output").write(data)
        }
    }
}

/// An operational failure with a message for the user (exit status 1).
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `--json` output: one JSON document on standard output, keys sorted, snake_case member names.
/// Text from others (advertised names, stored names) is in it as it is, but every character that
/// could act on a terminal (`PrintableText.isUnsafe`: DEL, C1 controls, bidirectional overrides,
/// line separators, which JSON allows raw) is written as a `\uXXXX` escape, so the document is
/// safe to show and decodes to the same values.
enum JSONOutput {
    /// Prints `value` as JSON followed by a newline.
    static func print(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        Swift.print(terminalSafe(String(decoding: try encoder.encode(value), as: UTF8.self)))
    }

    /// `json` (any JSONEncoder output, pretty-printed or not) with every unsafe character above
    /// U+001F written as a JSON escape: those can stand only inside strings, where the escape
    /// means the same character. (JSONEncoder escapes U+0000–U+001F in strings itself; outside
    /// them they are the document's own line breaks and indentation.)
    static func terminalSafe(_ json: String) -> String {
        func needsEscape(_ scalar: Unicode.Scalar) -> Bool { scalar.value > 0x1F && PrintableText.isUnsafe(scalar) }
        guard json.unicodeScalars.contains(where: needsEscape) else { return json }
        var result = ""
        for scalar in json.unicodeScalars {
            if needsEscape(scalar) {
                // Every unsafe character is in the Basic Multilingual Plane: one escape each.
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
