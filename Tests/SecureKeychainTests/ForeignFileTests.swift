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

    /// Makes a SQLite file in rollback-journal mode with python's sqlite3 (an independent writer).
    static func makeDatabase(_ path: String, _ script: String) throws {
        let made = try TestSupport.run("python3", ["-c", """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.executescript(sys.argv[2])
            db.commit()
            db.close()
            """, path, script])
        try #require(made.status == 0, "python3's sqlite3 module: \(made.stderrText)")
    }

    /// Issue 21: a file with the keychain's application id but no version table, and a newer
    /// keychain, both in rollback mode, are refused before the switch to WAL rewrites their header;
    /// by the library, by a writing command and by a reading one.
    @Test(arguments: [
        ("PRAGMA application_id = 1397115715; CREATE TABLE items (x);", KeychainError.notAKeychain(path: "")),
        ("PRAGMA application_id = 1397115715; CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (7);",
         KeychainError.unsupportedSchemaVersion(found: 7, supported: KeychainStore.schemaVersion)),
    ])
    func filesThatLookLikeKeychainsAreRefusedUnchanged(script: String, expected: KeychainError) async throws {
        try await withKeychainDirectory { directory, path in
            try Self.makeDatabase(path, script)
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(before[18] == 1 && before[19] == 1, "made in rollback mode")
            let error: KeychainError = if case .notAKeychain = expected { .notAKeychain(path: path) } else { expected }
            #expect(throws: error) { _ = try Keychain(path: path) }
            #expect(throws: error) { _ = try Keychain(path: path, configuration: .readOnly) }
            let sf = try FaultTests.sf()
            let set = try TestSupport.run(sf.path, ["keychain", "set", "--keychain", path, "--service", "s", "--account", "a"], stdin: Data("pw".utf8))
            #expect(set.status == 1 && set.stderrText.contains(error.description), "\(set.stderrText)")
            let list = try TestSupport.run(sf.path, ["keychain", "list", "--keychain", path])
            #expect(list.status == 1 && list.stderrText.contains(error.description), "\(list.stderrText)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "the file was modified")
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        }
    }

    /// Issue 21: the read-only commands never create or convert: an empty SQLite database and a
    /// missing file read as an empty keychain and stay as they were.
    @Test func readingCommandsNeverCreateOrConvert() async throws {
        try await withKeychainDirectory { directory, path in
            try Self.makeDatabase(path, "VACUUM;")
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            let missing = directory.appendingPathComponent("new/keychain.db").path
            let sf = try FaultTests.sf()
            for keychain in [path, missing] {
                for command in [["keychain", "list"], ["vault", "status"], ["key", "list"]] {
                    let result = try TestSupport.run(sf.path, command + ["--keychain", keychain])
                    #expect(result.status == 0, "\(command): \(result.stderrText)")
                }
                let get = try TestSupport.run(sf.path, ["keychain", "get", "--keychain", keychain, "--service", "s", "--account", "a"])
                #expect(get.status == 1 && get.stderrText.contains("no item for service 's'"), "\(get.stderrText)")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "the empty database was converted")
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("new").path), "a directory was created")

            // The library: an empty keychain that refuses every change, and the file unchanged.
            let keychain = try Keychain(path: path, configuration: .readOnly)
            #expect(keychain.isReadOnly)
            #expect(keychain.items(matching: KeychainQuery()).isEmpty)
            #expect(throws: KeychainError.self) { try keychain.setPassword("x", service: "s", account: "a") }
            try keychain.close()
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
            // Opened for writing, the same empty database becomes a keychain.
            try Keychain(path: path).close()
            #expect(try Keychain(path: path, configuration: .readOnly).items(matching: KeychainQuery()).isEmpty)
        }
    }
}
