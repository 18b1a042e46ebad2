import Foundation
import SFTestSupport
import Testing

/// Issue 9: the README's shell examples work as written. `scripts/readme-shell.py` runs every
/// command line of every ```sh block with the built `sf` (fixtures prepared, conventions and the
/// lines it cannot run listed in the script); this test fails if any command misbehaves.
@Suite struct ReadmeShellTests {
    /// Runs the script and suspends (rather than blocking a test thread) until it exits, for the
    /// minute or two its ~80 `sf` runs take; returns its exit status and standard output.
    static func runScript(sf: String) async throws -> (status: Int32, output: String) {
        let script = TestSupport.packageRoot.appendingPathComponent("scripts/readme-shell.py").path
        let outputFile = FileManager.default.temporaryDirectory.appendingPathComponent("sf-readme-shell-\(UUID().uuidString).txt")
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outputFile) }
        let output = try FileHandle(forWritingTo: outputFile)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(TestSupport.which("python3")))
        process.arguments = [script, "--sf", sf]
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        try output.close()
        return (status, String(decoding: try Data(contentsOf: outputFile), as: UTF8.self))
    }

    /// (4 minutes idle, about three times that loaded: well within `hangBackstop`.)
    @Test(.requiresSFBinary, .requires(.pythonCryptography, .sshKeygen), .hangBackstop)
    func readmeShellExamplesRunAsWritten() async throws {
        let sf = try #require(TestSupport.sfBinary, "the sf binary is built with the tests").path
        let (status, output) = try await Self.runScript(sf: sf)
        let lines = output.split(separator: "\n")
        let summary = lines.last.map(String.init) ?? ""
        print(summary)
        #expect(status == 0, "\(lines.filter { $0.hasPrefix("FAILED") || $0.hasPrefix("    ") }.joined(separator: "\n"))\n\(output.suffix(2000))")
        // The blocks are still there: most of the README's commands run (92 when this was written, 95 with a PostgreSQL server).
        let ran = Int(summary.split(separator: " ").dropFirst(3).first ?? "") ?? 0
        #expect(ran >= 85, "only \(ran) README commands ran: \(summary)")
    }
}
