import Foundation
import SFTestSupport
import Testing

/// Issue 12 item 10: when scrypt's memory cannot be had, the message says so.
@Suite struct ResourceTests {
    @Test func scryptOutOfMemoryIsAReadableError() throws {
        let scratch = try Scratch()
        let passphrase = try scratch.write("pw", Data("pw\n".utf8))
        // logN 22, r 8, p 1: within every ceiling, needs 4 GiB; the address space is capped at 600 MB.
        let header = try scratch.write("h", Data("SFE1".utf8) + Data([0x01, 0x01, 0x16, 0x08, 0x01]) + Data(count: 60))
        let binary = try #require(TestSupport.sfBinary)
        let result = try TestSupport.run(
            "/bin/sh", ["-c", "ulimit -v 600000 && exec \"$0\" open --passphrase-file \"$1\" \"$2\"", binary.path, passphrase, header])
        #expect(result.status == 1)
        #expect(result.stderrText.contains("out of memory"), "\(result.stderrText)")
        #expect(!result.stderrText.contains("underlyingCoreCryptoError"))
        #expect(result.stdout.isEmpty)
    }
}
