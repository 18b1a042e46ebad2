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
