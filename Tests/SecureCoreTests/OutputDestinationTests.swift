#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// Issue 12 item 0: the library's one output policy.
@Suite struct OutputDestinationTests {
    private func type(_ path: String) -> mode_t {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & S_IFMT : 0
    }

    @Test func classifiesFilesNewPathsDevicesFIFOsAndLinks() throws {
        let directory = try TestSupport.temporaryDirectory("sf-output")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("file").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let fifo = directory.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let link = directory.appendingPathComponent("link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: file)
        let fifoLink = directory.appendingPathComponent("fifo-link").path
        try FileManager.default.createSymbolicLink(atPath: fifoLink, withDestinationPath: fifo)
        let new = directory.appendingPathComponent("new").path

        #expect(try OutputDestination(path: file) == .file(path: file))
        #expect(try OutputDestination(path: new) == .file(path: new))
        #expect(try OutputDestination(path: fifo) == .special(path: fifo))
        #expect(try OutputDestination(path: fifoLink) == .special(path: fifoLink))
        #expect(try OutputDestination(path: "/dev/null") == .special(path: "/dev/null"))
        let resolved = try OutputDestination(path: link).path
        #expect(resolved.hasSuffix("/file") && resolved != link)
        #expect(throws: SecureCoreError.self) { try OutputDestination(path: directory.path) }
        #expect(throws: SecureCoreError.fileExists(path: file)) {
            try OutputDestination.write(Data("y".utf8), to: file, overwrite: false)
        }
    }

    @Test func aDeviceNodeStaysADevice() throws {
        let directory = try TestSupport.temporaryDirectory("sf-output")
        defer { try? FileManager.default.removeItem(at: directory) }
        let node = directory.appendingPathComponent("null").path
        let made = (try? TestSupport.run("mknod", [node, "c", "1", "3"]))?.status == 0
        guard made else {
            // mknod needs root; without it the FIFO cases above cover the policy.
            if TestSupport.isCI && getuid() == 0 { Issue.record("mknod failed as root") }
            print("SKIPPED: mknod needs root")
            return
        }
        try OutputDestination.write(Data("data".utf8), to: node)
        #expect(type(node) == S_IFCHR)
        let source = directory.appendingPathComponent("plain").path
        try Data("plain".utf8).write(to: URL(fileURLWithPath: source))
        try FileEncryption.encryptFile(at: source, to: node, key: SecretBytes.random(count: 32).symmetricKey)
        #expect(type(node) == S_IFCHR)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["null", "plain"])
    }
}

/// Issue 21: a symbolic link to `/proc/self/fd/N` where N is a file with no path (deleted; a memfd
/// as standard output is the same) has no file to rename over: the old policy renamed a 0600 file
/// over the link itself. It is written in place, and the link stays a link.
@Suite struct LinkedFileOutputTests {
    @Test func aLinkToAFileWithoutAPathIsWrittenInPlace() throws {
        let directory = try TestSupport.temporaryDirectory("sf-linked-output")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        // In this process: fd → a deleted file, a link to /proc/self/fd/N.
        let target = path("target")
        let fd = open(target, O_RDWR | O_CREAT, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        unlink(target)
        let link = path("L")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/proc/self/fd/\(fd)")
        #expect(try OutputDestination(path: link) == .linkedFile(path: link))
        try OutputDestination.write(Data("first, longer contents".utf8), to: link)
        try OutputDestination.write(Data("second".utf8), to: link)
        var status = stat()
        #expect(lstat(link, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK, "the link stays a link")
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = pread(fd, &buffer, buffer.count, 0)
        #expect(count == 6 && String(decoding: buffer.prefix(6), as: UTF8.self) == "second", "truncated, then written in place")
        #expect(throws: SecureCoreError.fileExists(path: link)) { try OutputDestination.write(Data("x".utf8), to: link, overwrite: false) }
        // A link to a file that has a path is still resolved and replaced atomically.
        let named = path("named")
        try Data("x".utf8).write(to: URL(fileURLWithPath: named))
        try FileManager.default.createSymbolicLink(atPath: path("named-link"), withDestinationPath: named)
        #expect(try OutputDestination(path: path("named-link")) == .file(path: named))
    }

    /// The same through `sf seal -o L` in a child whose fd 3 is a deleted file.
    @Test(.requiresSFBinary) func sfSealThroughALinkToADeletedFile() throws {
        let directory = try TestSupport.temporaryDirectory("sf-linked-output-cli")
        defer { try? FileManager.default.removeItem(at: directory) }
        let sf = try #require(TestSupport.sfBinary).path
        let script = """
            set -e
            cd "$1"
            "$2" random > key
            printf 'linked output' > in
            : > target
            exec 3<>target
            rm target
            ln -s /proc/self/fd/3 L
            "$2" seal --key-file key -o L in
            test -L L && echo "still a link"
            cat /proc/$$/fd/3 > sealed
            "$2" open --key-file key sealed
            """
        let result = try TestSupport.run("/bin/sh", ["-c", script, "sh", directory.path, sf])
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stdoutText == "still a link\nlinked output", "\(result.stdoutText) \(result.stderrText)")
    }
}
