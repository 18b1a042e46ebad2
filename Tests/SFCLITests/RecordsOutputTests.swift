#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SFTestSupport
import Testing

/// What `sf records` writes where others' data or the user's own files are at stake.
@Suite struct RecordsOutputTests {
    /// A store with one record, added with the test key file; (scratch, store path, key file, id).
    static func store(fields: [String]) throws -> (Scratch, String, String, String) {
        let scratch = try Scratch()
        let key = try scratch.write("key", Data((KeyFileTests.hex + "\n").utf8))
        let store = scratch.path("s.db")
        let added = try sf(["records", "add", "--store", store, "--collection", "c", "--key-file", key] + fields)
        try #require(added.status == 0, "\(added.stderrText)")
        return (scratch, store, key, added.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// `-o` naming the store file itself (or its -wal / -shm, by any path) is refused, and the
    /// store is left as it was.
    @Test func exportOntoTheStoreItselfIsRefused() throws {
        let (scratch, store, _, id) = try Self.store(fields: ["--field", "name=Ann"])
        let link = scratch.path("link.db")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: store)
        for output in [store, link, scratch.path("./s.db")] {
            let result = try sf(["records", "export", "--store", store, "-o", output])
            #expect(result.status == 1, "\(output): \(result.stderrText)")
            #expect(result.stderrText.contains("is the store's own file"), "\(result.stderrText)")
        }
        let listed = try sf(["records", "list", "--store", store])
        #expect(listed.status == 0 && listed.stdoutText.contains(id), "\(listed.stderrText)")
        // Another file is written as before.
        #expect(try sf(["records", "export", "--store", store, "-o", scratch.path("export.jsonl")]).status == 0)
    }

    /// Control characters, tabs and newlines stored in field values (names refuse them) come out
    /// escaped in `list` and `show`, so a writer of a shared store cannot rewrite the reader's
    /// terminal or fake columns and records.
    @Test func storedControlCharactersAreEscaped() throws {
        let hostile = "x\u{1B}]0;pwned\u{07}\u{1B}[2K\rfake\tcolumn\nrecord\u{202E}"
        let (scratch, store, _, id) = try Self.store(fields: ["--field", "note=\(hostile)"])
        defer { withExtendedLifetime(scratch) {} }
        for arguments in [["list"], ["show", id]] {
            let result = try sf(["records"] + arguments + ["--store", store])
            #expect(result.status == 0, "\(result.stderrText)")
            let output = result.stdout
            for byte: UInt8 in [0x1B, 0x07, 0x0D] { #expect(!output.contains(byte), "\(arguments[0]) wrote byte \(byte)") }
            #expect(result.stdoutText.contains(#"x\u{1B}]0;pwned\u{7}\u{1B}[2K\u{D}fake\u{9}column\u{A}record\u{202E}"#), "\(result.stdoutText)")
            // One record: one line in the list (its fields tab-separated), nothing more.
            if arguments == ["list"] { #expect(result.stdoutText.split(separator: "\n").count == 1) }
        }
    }

    /// A command that reads, given a store path where there is none (a typo), fails and makes no
    /// store there; `add` makes one.
    @Test func readingAMissingStoreMakesNone() throws {
        let scratch = try Scratch()
        let key = try scratch.write("key", Data((KeyFileTests.hex + "\n").utf8))
        let typo = scratch.path("tpyo.db")
        let id = "01a2231a-a65b-724f-b8cf-e8b0d754d755"
        for arguments in [
            ["status"], ["list"], ["search", "name=Ann", "--key-file", key], ["show", id], ["get", id, "name"], ["export"], ["delete", id],
            ["rotate-key", "--key-file", key],
        ] {
            let result = try sf(["records"] + arguments + ["--store", typo])
            #expect(result.status == 1 && result.stderrText.contains("no records store at \(typo)"), "\(arguments[0]): \(result.stderrText)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path) == ["key"], "\(arguments[0]) left a file")
        }
        let added = try sf(["records", "add", "--store", typo, "--collection", "c", "--key-file", key, "--field", "name=Ann"])
        #expect(added.status == 0, "\(added.stderrText)")
        #expect(try sf(["records", "status", "--store", typo]).status == 0)
    }
}
