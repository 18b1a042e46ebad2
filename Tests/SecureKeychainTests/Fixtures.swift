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

/// The `sqlite3` shell, for tests marked `.requires(.sqlite3)` (throws `PeerMissing` when it is
/// not installed, which only happens under CI).
func sqliteShell() throws -> String { try TestSupport.path(of: .sqlite3) }

/// Runs SQL on a keychain file through the `sqlite3` shell.
@discardableResult
func runSQL(_ shell: String, _ path: String, _ sql: String) throws -> String {
    let result = try TestSupport.run(shell, [path, sql])
    #expect(result.status == 0, "sqlite3 failed: \(result.stderrText)")
    return result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
}
