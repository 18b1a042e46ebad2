#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif
import Foundation
import SecureFoundation

/// Reads passphrases without taking them from the command line: from a file (first line), or
/// typed at the terminal with echo turned off.
enum PassphraseReader {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The first line of the file at `path` (without its line ending).
    static func read(fromFile path: String) throws -> SecretBytes {
        guard var data = FileManager.default.contents(atPath: path) else {
            throw Failure(description: "cannot read passphrase file \(path)")
        }
        defer { data.resetBytes(in: 0..<data.count) }
        let line = data.prefix { $0 != 0x0a }
        let trimmed = line.last == 0x0d ? line.dropLast() : line
        guard !trimmed.isEmpty else { throw Failure(description: "passphrase file \(path) starts with an empty line") }
        return SecretBytes(trimmed)
    }

    /// Prompts on the controlling terminal with echo off. Fails when there is no terminal.
    static func prompt(_ message: String) throws -> SecretBytes {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            throw Failure(description: "no terminal to ask for the passphrase on (use --passphrase-file)")
        }
        defer { close(fd) }
        var original = termios()
        guard tcgetattr(fd, &original) == 0 else { throw Failure(description: "cannot configure the terminal") }
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        _ = tcsetattr(fd, TCSAFLUSH, &silent)
        defer {
            _ = tcsetattr(fd, TCSAFLUSH, &original)
            _ = Foundation.write(fd, "\n", 1)
        }
        _ = message.withCString { Foundation.write(fd, $0, strlen($0)) }
        var bytes = [UInt8]()
        defer { for i in bytes.indices { bytes[i] = 0 } }
        var byte: UInt8 = 0
        while Foundation.read(fd, &byte, 1) == 1, byte != 0x0a {
            if byte != 0x0d { bytes.append(byte) }
        }
        guard !bytes.isEmpty else { throw Failure(description: "empty passphrase") }
        return SecretBytes(bytes)
    }
}
