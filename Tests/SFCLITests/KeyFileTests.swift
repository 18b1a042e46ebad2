import Foundation
import SFTestSupport
import Testing

/// One rule for every `--key-file` (docs/FORMATS.md "Text rules"): exactly 32 bytes are the key,
/// otherwise 64 hex digits (either case) with only whitespace around them.
@Suite struct KeyFileTests {
    static let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

    /// Runs a command of `sf seal` and of `sf records` with the key file holding `contents`.
    static func results(_ contents: Data) throws -> (seal: ProcessResult, records: ProcessResult) {
        let scratch = try Scratch()
        let key = try scratch.write("key", contents)
        let seal = try sf(["seal", "--key-file", key], stdin: Data("x".utf8))
        let records = try sf([
            "records", "add", "--store", scratch.path("s.db"), "--collection", "c", "--key-file", key, "--field", "a=b",
        ])
        return (seal, records)
    }

    static let wellFormed: [String] = [
        hex, hex + "\n", hex + "\r\n", " \t" + hex.uppercased() + " \n\n", "\u{3000}" + hex + "\u{85}",
    ]

    @Test(arguments: wellFormed)
    func accepted(text: String) throws {
        let (seal, records) = try Self.results(Data(text.utf8))
        #expect(seal.status == 0, "\(seal.stderrText)")
        #expect(records.status == 0, "\(records.stderrText)")
    }

    @Test func rawBytesAreTheKey() throws {
        let (seal, records) = try Self.results(Data((0..<32).map { UInt8($0) }))
        #expect(seal.status == 0)
        #expect(records.status == 0)
    }

    static let malformed: [String] = {
        let head = String(hex.prefix(32)), tail = String(hex.dropFirst(32))
        return [
            String(hex.dropLast()), hex + "0", "+" + String(hex.dropFirst()), head + " " + tail, head + "\n" + tail,
            "0x" + String(hex.dropFirst(2)), "",
        ]
    }()

    @Test(arguments: malformed)
    func refused(text: String) throws {
        let (seal, records) = try Self.results(Data(text.utf8))
        #expect(seal.status == 1)
        #expect(seal.stderrText.contains("64 hex digits"))
        #expect(records.status == 1)
        #expect(records.stderrText.contains("64 hex digits"))
    }
}

/// `sf records import` reads exports whose lines end in LF or CR LF (docs/FORMATS.md "Text rules").
@Suite struct RecordsImportLineEndingTests {
    @Test(arguments: ["\n", "\r\n"])
    func importsEitherLineEnding(ending: String) throws {
        let scratch = try Scratch()
        let key = try scratch.write("key", Data((KeyFileTests.hex + "\n").utf8))
        let store = scratch.path("s.db")
        let added = try sf(["records", "add", "--store", store, "--collection", "c", "--key-file", key, "--field", "name=Ann", "--sealed", "pin=1234"])
        #expect(added.status == 0, "\(added.stderrText)")
        let id = added.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let export = try sf(["records", "export", "--store", store])
        #expect(export.status == 0)
        let converted = export.stdoutText.replacingOccurrences(of: "\n", with: ending)
        let file = try scratch.write("export.jsonl", Data(converted.utf8))
        let copy = scratch.path("copy.db")
        let imported = try sf(["records", "import", "--store", copy, "-i", file])
        #expect(imported.status == 0, "\(imported.stderrText)")
        let shown = try sf(["records", "show", "--store", copy, "--decrypt", "--key-file", key, id])
        #expect(shown.status == 0, "\(shown.stderrText)")
        #expect(shown.stdoutText.contains("1234"))
    }
}
