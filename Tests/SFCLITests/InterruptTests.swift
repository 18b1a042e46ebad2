#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// Runs `sf arguments` with a slow pipe for standard input (`prefix` now, the rest never), waits
/// (at most 300 s) until `started` holds, sends `signalNumber`, and waits for the process to end
/// (killed and reported after 300 s, so the suite never hangs); the ended process.
func interruptedSF(
    _ arguments: [String], environment: [String: String]? = nil, writing prefix: Data, once started: () -> Bool, by signalNumber: Int32,
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> Process {
    let binary = try #require(TestSupport.sfBinary)
    let process = Process()
    process.executableURL = binary
    process.arguments = arguments
    if let environment { process.environment = environment }
    let input = Pipe()
    process.standardInput = input
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    signal(SIGPIPE, SIG_IGN)
    try input.fileHandleForWriting.write(contentsOf: prefix)
    var waited = 0
    while !started(), waited < 6000 {
        usleep(50_000)
        waited += 1
    }
    #expect(started(), "sf \(arguments[0]) has started", sourceLocation: sourceLocation)
    usleep(200_000)
    kill(process.processIdentifier, signalNumber)
    var exited = 0
    while process.isRunning, exited < 6000 {
        usleep(50_000)
        exited += 1
    }
    if process.isRunning {
        Issue.record("sf \(arguments[0]) did not exit after signal \(signalNumber)", sourceLocation: sourceLocation)
        kill(process.processIdentifier, SIGKILL)
    }
    process.waitUntilExit()
    try? input.fileHandleForWriting.close()
    return process
}

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

        let temporaryFile = { () -> String? in
            (try? FileManager.default.contentsOfDirectory(atPath: scratch.url.path))?.first { $0.hasPrefix(".out.tmp-") }
        }
        let process = try interruptedSF(arguments, writing: encrypted.prefix(1 << 20), once: { temporaryFile() != nil }, by: signalNumber)
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
            deadline = time.monotonic() + 300
            while termios.tcgetattr(fd)[3] & termios.ECHO:
                if time.monotonic() > deadline:
                    print("echo never went off"); sys.exit(3)
                time.sleep(0.01)
            os.kill(pid, signal.SIGINT)
            _, status = os.waitpid(pid, 0)
            print("signaled" if os.WIFSIGNALED(status) else "exited", "echo" if termios.tcgetattr(fd)[3] & termios.ECHO else "silent")
            """
        let result = try TestSupport.run(try TestSupport.path(of: .pythonCryptography), ["-c", script, binary])
        #expect(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "signaled echo", "\(result.stdoutText) \(result.stderrText)")
    }

    /// `sf records import` from standard input copies it to a private file first (clear fields and
    /// wrapped keys): SIGINT while it reads leaves no such file.
    @Test func interruptedImportFromStandardInputLeavesNoCopy() throws {
        let scratch = try Scratch()
        let temporary = scratch.path("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        let spooled = { (try? FileManager.default.contentsOfDirectory(atPath: temporary))?.first { $0.hasPrefix("sf-import-") } }
        // Part of an export now, the rest never (until the signal).
        let process = try interruptedSF(
            ["records", "import", "--store", scratch.path("s.db")], environment: ProcessInfo.processInfo.environment.merging(["TMPDIR": temporary]) { $1 },
            writing: Data(repeating: UInt8(ascii: " "), count: 1 << 20), once: { spooled() != nil }, by: SIGINT)
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGINT)
        #expect(spooled() == nil, "the copy of standard input was left behind")
    }
}
