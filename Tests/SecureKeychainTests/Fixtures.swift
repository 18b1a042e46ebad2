import Foundation
import SFTestSupport
import Testing
@testable import SecureKeychain

/// A temporary directory with a keychain path in it, removed at the end of `body`.
func withKeychainDirectory<R>(_ body: (URL, String) async throws -> R) async throws -> R {
    let directory = try TestSupport.temporaryDirectory("sf-keychain")
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory, directory.appendingPathComponent("keychain.db").path)
}

/// Expects `body` to throw exactly `expected`.
func expectError<R>(
    _ expected: KeychainError, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R
) {
    do {
        _ = try body()
        Issue.record("expected \(expected), got success", sourceLocation: sourceLocation)
    } catch {
        #expect(error as? KeychainError == expected, sourceLocation: sourceLocation)
    }
}

/// The `sqlite3` shell, or nil after recording why (a failure under CI).
func sqliteShell() -> String? {
    if let shell = TestSupport.which("sqlite3") { return shell }
    if TestSupport.isCI { Issue.record("sqlite3 shell missing (apt-get install sqlite3)") }
    else { print("SKIP: sqlite3 shell not installed; file-level checks skipped") }
    return nil
}

/// Runs SQL on a keychain file through the `sqlite3` shell.
@discardableResult
func runSQL(_ shell: String, _ path: String, _ sql: String) throws -> String {
    let result = try TestSupport.run(shell, [path, sql])
    #expect(result.status == 0, "sqlite3 failed: \(result.stderrText)")
    return result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
}
