import Foundation
import SFTestSupport
import Testing
@testable import SecureKeychain

@Suite struct StoreFileTests {
    @Test func newFileIsPrivateInAPrivateDirectory() async throws {
        try await withKeychainDirectory { directory, _ in
            let path = directory.appendingPathComponent("new/sub/keychain.db").path
            let keychain = try Keychain(path: path)
            try keychain.setPassword("x", service: "s", account: "a")
            try keychain.synchronizeBlocking()
            func mode(_ path: String) throws -> Int {
                (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
            }
            #expect(try mode(path) == 0o600)
            #expect(try mode(path + "-wal") & 0o077 == 0)
            #expect(try mode((path as NSString).deletingLastPathComponent) == 0o700)
            try keychain.close()
            try Keychain.checkIntegrity(path: path)
        }
    }

    @Test func defaultLocationFollowsTheEnvironment() throws {
        #expect(try Keychain.defaultPath(environment: ["SF_HOME": "/a", "XDG_DATA_HOME": "/b", "HOME": "/c"]) == "/a/keychain.db")
        #expect(try Keychain.defaultPath(environment: ["XDG_DATA_HOME": "/b", "HOME": "/c"]) == "/b/securefoundation/keychain.db")
        #expect(try Keychain.defaultPath(environment: ["XDG_DATA_HOME": "", "HOME": "/c"])
            == "/c/.local/share/securefoundation/keychain.db")
        expectError(.invalidLocation("set SF_HOME, XDG_DATA_HOME or HOME")) { try Keychain.defaultPath(environment: [:]) }
    }

    // Live peer: the sqlite3 shell edits the file underneath the keychain.
    @Test(.requires(.sqlite3)) func walModeAndSchemaVersionAreRecorded() async throws {
        let shell = try sqliteShell()
        try await withKeychainDirectory { _, path in
            try Keychain(path: path).close()
            #expect(try runSQL(shell, path, "PRAGMA journal_mode") == "wal")
            #expect(try runSQL(shell, path, "SELECT version FROM schema_version") == "\(KeychainStore.schemaVersion)")
            #expect(try runSQL(shell, path, "PRAGMA application_id") == "\(KeychainStore.applicationID)")
        }
    }

    // Live peer: the sqlite3 shell edits the file underneath the keychain.
    @Test(.requires(.sqlite3)) func aNegativeSchemaVersionIsCorruptNotACrash() async throws {
        let shell = try sqliteShell()
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setPassword("x", service: "s", account: "a")
            try keychain.close()
            for version in [-1, Int64.min] {
                try runSQL(shell, path, "UPDATE schema_version SET version = \(version)")
                expectError(.corrupted(path: path, details: "schema version \(version)")) { try Keychain(path: path) }
            }
            // Nothing was changed: the item is there once the version is put back.
            try runSQL(shell, path, "UPDATE schema_version SET version = \(KeychainStore.schemaVersion)")
            #expect(try Keychain(path: path).password(service: "s", account: "a") == "x")
        }
    }

    // Live peer: the sqlite3 shell edits the file underneath the keychain.
    @Test(.requires(.sqlite3)) func olderSchemaIsMigratedForward() async throws {
        let shell = try sqliteShell()
        try await withKeychainDirectory { _, path in
            // A version-0 file: marked as a keychain, nothing else yet.
            try runSQL(shell, path, """
                PRAGMA application_id = \(KeychainStore.applicationID);
                CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (0);
                """)
            let keychain = try Keychain(path: path)
            try keychain.setPassword("x", service: "s", account: "a")
            try keychain.close()
            #expect(try runSQL(shell, path, "SELECT version FROM schema_version") == "\(KeychainStore.schemaVersion)")
            #expect(try Keychain(path: path).password(service: "s", account: "a") == "x")
        }
    }

    // Live peer: the sqlite3 shell edits the file underneath the keychain.
    @Test(.requires(.sqlite3)) func newerSchemaIsRefusedUnchanged() async throws {
        let shell = try sqliteShell()
        try await withKeychainDirectory { _, path in
            try Keychain(path: path).close()
            try runSQL(shell, path, "UPDATE schema_version SET version = 99")
            expectError(.unsupportedSchemaVersion(found: 99, supported: KeychainStore.schemaVersion)) { try Keychain(path: path) }
            #expect(try runSQL(shell, path, "SELECT version FROM schema_version") == "99")
        }
    }

    @Test func otherDatabasesAndOtherFilesAreRefused() async throws {
        try await withKeychainDirectory { directory, path in
            let text = directory.appendingPathComponent("notes.txt").path
            try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: text))
            do {
                _ = try Keychain(path: text)
                Issue.record("a text file opened as a keychain")
            } catch let error as KeychainError {
                guard case .storage(_, let code, _) = error else { Issue.record("unexpected \(error)"); return }
                #expect(code == 26)  // SQLITE_NOTADB
            }
        }
    }

    // Live peer: the sqlite3 shell makes a database that is not a keychain.
    @Test(.requires(.sqlite3)) func otherSQLiteDatabasesAreRefused() async throws {
        let shell = try sqliteShell()
        try await withKeychainDirectory { _, path in
            try runSQL(shell, path, "CREATE TABLE unrelated (x)")
            expectError(.notAKeychain(path: path)) { try Keychain(path: path) }
        }
    }

    @Test func integrityCheckOfAMissingFileFails() {
        expectError(.invalidLocation("/nonexistent/k.db does not exist")) { try Keychain.checkIntegrity(path: "/nonexistent/k.db") }
    }
}
