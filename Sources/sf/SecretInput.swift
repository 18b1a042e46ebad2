#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import SecureFoundation

/// Secret values for commands: from standard input when it is not a terminal (one trailing newline
/// removed), else prompted on the terminal with echo off. Never from the command line.
enum SecretInput {
    static func read(prompt: String) throws -> Data {
        if isatty(STDIN_FILENO) == 1 { return try promptWithoutEcho(prompt) }
        var data = try FileInput(descriptor: STDIN_FILENO, name: "standard input").readToEnd()
        if data.last == UInt8(ascii: "\n") {
            data.removeLast()
            if data.last == UInt8(ascii: "\r") { data.removeLast() }
        }
        return data
    }

    private static func promptWithoutEcho(_ prompt: String) throws -> Data {
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard tty >= 0 else { throw SecureCoreError.io(path: "/dev/tty", reason: String(cString: strerror(errno))) }
        defer { close(tty) }
        var original = termios()
        tcgetattr(tty, &original)
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        _ = prompt.withCString { write(tty, $0, strlen($0)) }
        tcsetattr(tty, TCSAFLUSH, &silent)
        defer {
            tcsetattr(tty, TCSAFLUSH, &original)
            _ = write(tty, "\n", 1)
        }
        var line = Data()
        var byte: UInt8 = 0
        while Foundation.read(tty, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        return line
    }
}
