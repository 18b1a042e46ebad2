#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// Issue 12 item 14: a decryption to -o interrupted by SIGINT, SIGTERM or SIGHUP leaves no
/// temporary file (holding verified plaintext) and no output file.
@Suite struct InterruptTests {
    enum Command: String, CaseIterable { case decrypt, open }

    @Test(arguments: Command.allCases, [SIGINT, SIGTERM, SIGHUP])
    func signalDuringDecryptionToAFileRemovesTheTemporaryFile(command: Command, signalNumber: Int32) throws {
        let scratch = try Scratch()
        let plaintext = try scratch.write("plain", SecureRandom.bytes(count: 4 << 20))
        let arguments: [String]
        let encrypted: Data
        switch command {
        case .decrypt:
            #expect(try sf(["keygen", "-o", scratch.path("identity")]).status == 0)
            let recipient = try sf(["keygen", "-y", scratch.path("identity")]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            encrypted = try sf(["encrypt", "-r", recipient, plaintext]).stdout
            arguments = ["decrypt", "-i", scratch.path("identity"), "-o", scratch.path("out")]
        case .open:
            let key = try scratch.write("key", Data(try sf(["random"]).stdoutText.utf8))
            encrypted = try sf(["seal", "--stream", "--key-file", key, plaintext]).stdout
            arguments = ["open", "--key-file", key, "-o", scratch.path("out")]
        }
        #expect(encrypted.count > 4 << 20)

        let binary = try #require(TestSupport.sfBinary)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // A slow pipe: the first megabyte now, the rest never (until the signal).
        signal(SIGPIPE, SIG_IGN)
        try input.fileHandleForWriting.write(contentsOf: encrypted.prefix(1 << 20))
        let temporaryFile = { () -> String? in
            (try? FileManager.default.contentsOfDirectory(atPath: scratch.url.path))?.first { $0.hasPrefix(".out.tmp-") }
        }
        var waited = 0
        while temporaryFile() == nil, waited < 200 {
            usleep(50_000)
            waited += 1
        }
        #expect(temporaryFile() != nil, "the command has started writing its temporary file")
        usleep(200_000)
        kill(process.processIdentifier, signalNumber)
        // Never hang the suite: a process still running after 60 s is killed and reported.
        var exited = 0
        while process.isRunning, exited < 1200 {
            usleep(50_000)
            exited += 1
        }
        if process.isRunning {
            Issue.record("sf \(command) did not exit after signal \(signalNumber)")
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        try? input.fileHandleForWriting.close()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == signalNumber)
        #expect(temporaryFile() == nil, "no .out.tmp-* left after signal \(signalNumber)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("out")))
    }
}

/// What a termination signal must not leave behind outside the process.
@Suite struct InterruptCleanupTests {
    /// Ctrl-C at a prompt without echo gives the terminal its echo back (a pseudo-terminal driven
    /// by Python's `pty`: echo goes off at the prompt, SIGINT, then the terminal's flags are read).
    @Test(.requires(.pythonCryptography)) func interruptedPromptRestoresEcho() throws {
        let binary = try #require(TestSupport.sfBinary).path
        let script = """
            import os, pty, signal, sys, termios, time
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], [sys.argv[1], "kdf", "--log-n", "10"])
            deadline = time.monotonic() + 60
            while termios.tcgetattr(fd)[3] & termios.ECHO:
                if time.monotonic() > deadline:
                    print("echo never went off"); sys.exit(3)
                time.sleep(0.01)
            os.kill(pid, signal.SIGINT)
            _, status = os.waitpid(pid, 0)
            print("signaled" if os.WIFSIGNALED(status) else "exited", "echo" if termios.tcgetattr(fd)[3] & termios.ECHO else "silent")
            """
        let result = try TestSupport.run("/usr/bin/env", ["python3", "-c", script, binary])
        #expect(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "signaled echo", "\(result.stdoutText) \(result.stderrText)")
    }

    /// `sf records import` from standard input copies it to a private file first (clear fields and
    /// wrapped keys): SIGINT while it reads leaves no such file.
    @Test func interruptedImportFromStandardInputLeavesNoCopy() throws {
        let scratch = try Scratch()
        let temporary = scratch.path("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        let binary = try #require(TestSupport.sfBinary)
        let process = Process()
        process.executableURL = binary
        process.arguments = ["records", "import", "--store", scratch.path("s.db")]
        process.environment = ProcessInfo.processInfo.environment.merging(["TMPDIR": temporary]) { $1 }
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        signal(SIGPIPE, SIG_IGN)
        // Part of an export now, the rest never (until the signal).
        try input.fileHandleForWriting.write(contentsOf: Data(repeating: UInt8(ascii: " "), count: 1 << 20))
        let spooled = { (try? FileManager.default.contentsOfDirectory(atPath: temporary))?.first { $0.hasPrefix("sf-import-") } }
        var waited = 0
        while spooled() == nil, waited < 1200 {
            usleep(50_000)
            waited += 1
        }
        try #require(spooled() != nil, "the import has started its copy of standard input")
        kill(process.processIdentifier, SIGINT)
        var exited = 0
        while process.isRunning, exited < 1200 {
            usleep(50_000)
            exited += 1
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGINT)
        #expect(spooled() == nil, "the copy of standard input was left behind")
    }
}
