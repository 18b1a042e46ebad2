import Foundation
import SFTestSupport
import Testing

/// `sf` with standard error closed (`2>&-`): what it would have said is lost, and nothing else.
/// It exits with its own status; Foundation's `FileHandle.write(_:)` traps on the write error, so
/// before, every one of these ended by SIGILL (status 132 from the shell).
@Suite(.requiresSFBinary) struct ClosedStandardErrorTests {
    /// Runs `sf arguments` through `/bin/sh` with standard error closed; the shell's status.
    func sfWithoutStandardError(_ arguments: [String]) throws -> ProcessResult {
        let binary = try #require(TestSupport.sfBinary, "the sf binary is built with the tests").path
        return try TestSupport.run("/bin/sh", ["-c", "exec \"$0\" \"$@\" 2>&-", binary] + arguments)
    }

    @Test("a usage error, a failed operation and a success that writes to standard error keep their status")
    func statusesStay() throws {
        let scratch = try Scratch()
        try Data("text\n".utf8).write(to: URL(fileURLWithPath: scratch.path("file")))
        #expect(try sfWithoutStandardError(["hash", "--algorithm", "nope", scratch.path("file")]).status == 2)
        #expect(try sfWithoutStandardError(["records", "list", "--store", scratch.path("missing/records.db")]).status == 1)
        // keygen -o says the public key on standard error.
        let made = try sfWithoutStandardError(["keygen", "-o", scratch.path("identity")])
        #expect(made.status == 0)
        #expect(FileManager.default.fileExists(atPath: scratch.path("identity")))
    }
}
