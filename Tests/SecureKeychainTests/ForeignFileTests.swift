import Foundation
import SFTestSupport
import Testing
@testable import SecureKeychain

/// Issue 12 item 15: another application's SQLite file is refused before anything is written.
@Suite struct ForeignFileTests {
    @Test func aForeignDatabaseIsRefusedUnchanged() async throws {
        try await withKeychainDirectory { directory, _ in
            let path = directory.appendingPathComponent("other.db").path
            let made = try TestSupport.run("python3", ["-c", """
                import sqlite3, sys
                db = sqlite3.connect(sys.argv[1])
                db.execute("CREATE TABLE notes (body TEXT)")
                db.execute("INSERT INTO notes VALUES ('hello')")
                db.commit()
                db.close()
                """, path])
            try #require(made.status == 0, "python3's sqlite3 module: \(made.stderrText)")
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(throws: KeychainError.notAKeychain(path: path)) { _ = try Keychain(path: path) }
            let after = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(after == before, "the foreign file was modified (journal mode byte \(after.count > 19 ? after[18] : 0))")
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))

            do {
                let sf = try FaultTests.sf()
                let result = try TestSupport.run(sf.path, ["keychain", "list", "--keychain", path])
                #expect(result.status == 1 && result.stderrText.contains("not a SecureFoundation keychain"))
                #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
            }
        }
    }
}

/// Issue 12 item 18: SQLite's internal texts do not reach messages.
@Suite struct StorageMessageTests {
    @Test func aMissingVersionRowIsReportedAsDamageNotAsASQLiteInternal() async throws {
        try await withKeychainDirectory { _, path in
            try Keychain(path: path).close()
            let edited = try TestSupport.run("python3", ["-c", """
                import sqlite3, sys
                db = sqlite3.connect(sys.argv[1])
                db.execute("DELETE FROM schema_version")
                db.commit()
                db.close()
                """, path])
            try #require(edited.status == 0, "\(edited.stderrText)")
            do {
                _ = try Keychain(path: path)
                Issue.record("opened a keychain without its version row")
            } catch {
                let text = "\(error)"
                #expect(!text.contains("no more rows"), "\(text)")
                #expect(text.contains("missing"))
            }
        }
    }
}
