#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// A special output in a scratch directory: a character device (a copy of /dev/null made with
/// `mknod`, which needs root) or, without root, a FIFO drained by a `cat` reader per command.
final class SpecialOutput {
    let path: String
    let isDevice: Bool
    private var reader: Process?

    init(in scratch: Scratch, name: String = "null") throws {
        path = scratch.path(name)
        if (try? TestSupport.run("mknod", [path, "c", "1", "3"]))?.status == 0 {
            isDevice = true
        } else {
            #expect(mkfifo(path, 0o600) == 0)
            isDevice = false
        }
    }

    /// Starts a reader when the output is a FIFO (a writer blocks until one exists).
    func prepare() throws {
        guard !isDevice else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exec cat \"$0\" > /dev/null", path]
        try process.run()
        reader = process
    }

    /// Stops the reader (if the command never opened the FIFO) and reports the node's type.
    func finish() -> mode_t {
        if let reader {
            if reader.isRunning {
                // Opening the FIFO for writing releases a reader blocked in open.
                let fd = open(path, O_WRONLY | O_NONBLOCK)
                if fd >= 0 { close(fd) }
            }
            reader.waitUntilExit()
            self.reader = nil
        }
        var status = stat()
        guard lstat(path, &status) == 0 else { return 0 }
        return status.st_mode & S_IFMT
    }

    var expectedType: mode_t { isDevice ? S_IFCHR : S_IFIFO }
}

/// Issue 12 item 0: every command that takes an output path writes to a device or FIFO in place
/// and never renames a regular file over it.
@Suite struct OutputPolicyTests {
    /// A secret read from standard input (`--passphrase-file /dev/stdin`) buffered the data
    /// after its line, and the command then read "the rest" of standard input as its input: an
    /// empty message sealed, or a signature over the wrong bytes, with exit 0. Every command that
    /// reads standard input twice now refuses, and writes nothing.
    @Test func standardInputIsReadForOneThingOnly() throws {
        let scratch = try Scratch()
        let stdin = Data("a passphrase\nthe message\n".utf8)
        let identity = scratch.path("id.txt")
        #expect(try sf(["keygen", "-o", identity]).status == 0)
        let recipient = try sf(["keygen", "-y", identity]).stdoutText
        let cases: [(String, [String], Data)] = [
            ("seal", ["seal", "--passphrase-file", "/dev/stdin", "--log-n", "10", "-o", scratch.path("out")], stdin),
            ("seal --stream", ["seal", "--stream", "--passphrase-file", "/dev/stdin", "--log-n", "10", "-o", scratch.path("out")], stdin),
            ("encrypt -R -", ["encrypt", "-R", "-", "-o", scratch.path("out")], Data(recipient.utf8)),
            ("hash --hmac-key-file", ["hash", "--hmac-key-file", "/dev/stdin"], stdin),
        ]
        for (name, arguments, stdin) in cases {
            let result = try sf(arguments, stdin: stdin)
            #expect(result.status == 1 && result.stderrText.contains("standard input is used for"), "\(name): \(result.status) \(result.stderrText)")
            #expect(!FileManager.default.fileExists(atPath: scratch.path("out")), "\(name) wrote its output")
        }
        // Each alone is fine.
        let message = try scratch.write("message", Data("the message\n".utf8))
        #expect(try sf(["seal", "--passphrase-file", "/dev/stdin", "--log-n", "10", "-o", scratch.path("out"), message], stdin: stdin).status == 0)
    }

    @Test func everyOutputOptionLeavesADeviceADevice() throws {
        let scratch = try Scratch()
        let special = try SpecialOutput(in: scratch)
        let key = try scratch.write("key", Data(try sf(["random"]).stdoutText.utf8))
        let passphrase = try scratch.write("pass", Data("correct horse\n".utf8))
        let plaintext = try scratch.write("plain", SecureRandom.bytes(count: 100_000))
        let sealed = try scratch.write("sealed", try sf(["seal", "--key-file", key, plaintext]).stdout)
        let streamed = try scratch.write("streamed", try sf(["seal", "--stream", "--key-file", key, plaintext]).stdout)
        let identity = scratch.path("identity")
        #expect(try sf(["keygen", "-o", identity]).status == 0)
        let recipient = try sf(["keygen", "-y", identity]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let ageFile = try scratch.write("age", try sf(["encrypt", "-r", recipient, plaintext]).stdout)
        let privateKey = scratch.path("p256.pem")
        #expect(try sf(["key", "generate", "--type", "p256", "--out", privateKey]).status == 0)

        let commands: [(String, [String])] = [
            ("seal -o", ["seal", "--key-file", key, "-o", special.path, plaintext]),
            ("seal --stream -o", ["seal", "--stream", "--key-file", key, "-o", special.path, plaintext]),
            ("seal --armor -o (passphrase)", ["seal", "--armor", "--passphrase-file", passphrase, "--log-n", "10", "-o", special.path, plaintext]),
            ("open -o", ["open", "--key-file", key, "-o", special.path, sealed]),
            ("open -o (stream)", ["open", "--key-file", key, "-o", special.path, streamed]),
            ("key generate --out --force", ["key", "generate", "--type", "ed25519", "--out", special.path, "--force"]),
            ("key generate --public-out --force", ["key", "generate", "--type", "ed25519", "--out", scratch.path("k2"), "--public-out", special.path, "--force"]),
            ("key export -o", ["key", "export", "--in", privateKey, "--format", "jwk", "-o", special.path]),
            ("encrypt -o", ["encrypt", "-r", recipient, "-o", special.path, plaintext]),
            ("decrypt -o", ["decrypt", "-i", identity, "-o", special.path, ageFile]),
            ("keygen -y", ["keygen", "-y", identity, "-o", special.path]),
        ]
        for (name, arguments) in commands {
            try special.prepare()
            let result = try sf(arguments)
            #expect(result.status == 0, "\(name): \(result.stderrText)")
            #expect(special.finish() == special.expectedType, "\(name) replaced the special file")
        }
        // keygen -o and key generate without --force create without replacing: they refuse, and the node stays.
        for arguments in [["keygen", "-o", special.path], ["key", "generate", "--type", "ed25519", "--out", special.path]] {
            try special.prepare()
            let refused = try sf(arguments)
            #expect(refused.status == 1)
            #expect(special.finish() == special.expectedType)
        }
        // No temporary files were left beside the node.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }

    @Test func aSymlinkToADeviceIsWrittenThroughAndASymlinkToAFileStaysALink() throws {
        let scratch = try Scratch()
        let special = try SpecialOutput(in: scratch)
        let key = try scratch.write("key", Data(try sf(["random"]).stdoutText.utf8))
        let plaintext = try scratch.write("plain", Data("hello".utf8))
        let deviceLink = scratch.path("stdout-like")
        try FileManager.default.createSymbolicLink(atPath: deviceLink, withDestinationPath: special.path)
        try special.prepare()
        #expect(try sf(["seal", "--key-file", key, "-o", deviceLink, plaintext]).status == 0)
        #expect(special.finish() == special.expectedType)
        var status = stat()
        #expect(lstat(deviceLink, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK)

        let target = try scratch.write("target", Data("old".utf8))
        let fileLink = scratch.path("file-link")
        try FileManager.default.createSymbolicLink(atPath: fileLink, withDestinationPath: target)
        #expect(try sf(["seal", "--key-file", key, "-o", fileLink, plaintext]).status == 0)
        #expect(lstat(fileLink, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK)
        let opened = try sf(["open", "--key-file", key, target])
        #expect(opened.stdoutText == "hello")
    }
}
