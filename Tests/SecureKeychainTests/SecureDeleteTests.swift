import Foundation
import SFTestSupport
import Testing
import SQLiteSupport
@testable import SecureKeychain

/// Issue 12 item 9: a deleted password's bytes do not stay in the keychain file. (Debian's
/// libsqlite3 is built with SQLITE_SECURE_DELETE, so on such systems these pass without the
/// keychain's own `PRAGMA secure_delete = ON`; they guard SQLite builds that default it off.)
@Suite struct SecureDeleteTests {
    @Test func theKeychainConnectionHasSecureDeleteOn() async throws {
        try await withKeychainDirectory { _, path in
            let store = try KeychainStore(path: path, busyTimeoutMilliseconds: 1000)
            #expect(try store.connection.integer("PRAGMA secure_delete") == 1)
        }
    }

    @Test func deletedAndReplacedValuesAreGoneFromTheFiles() async throws {
        try await withKeychainDirectory { directory, path in
            let deleted = "DELETED-" + UUID().uuidString
            let replaced = "REPLACED-" + UUID().uuidString
            let keychain = try Keychain(path: path)
            for index in 0..<20 { try keychain.setPassword("filler \(index) " + String(repeating: "f", count: 100), service: "s", account: "f\(index)") }
            try keychain.setPassword(deleted, service: "s", account: "gone")
            try keychain.setPassword(replaced, service: "s", account: "changed")
            try keychain.synchronizeBlocking()
            try keychain.deletePassword(service: "s", account: "gone")
            try keychain.setPassword("new value", service: "s", account: "changed")
            try keychain.close()
            // Closing checkpoints the WAL into the database file; look at every file of the keychain.
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            for name in files {
                let data = try Data(contentsOf: directory.appendingPathComponent(name))
                #expect(data.range(of: Data(deleted.utf8)) == nil, "\(name) still holds the deleted value")
                #expect(data.range(of: Data(replaced.utf8)) == nil, "\(name) still holds the replaced value")
            }
            let reopened = try Keychain(path: path)
            #expect(try reopened.password(service: "s", account: "changed") == "new value")
            #expect(try reopened.password(service: "s", account: "f3").hasPrefix("filler 3"))
        }
    }

    /// Issue 21: while another connection holds the keychain open, closing ours does not checkpoint,
    /// so deleted and replaced values stayed in `-wal` until a later run. Each write that frees a
    /// value now truncates the WAL; the files hold neither value as soon as the change is durable.
    @Test func freedValuesLeaveTheWALWhileAnotherConnectionIsOpen() async throws {
        try await withKeychainDirectory { directory, path in
            let deleted = "DELETED-" + UUID().uuidString
            let replaced = "REPLACED-" + UUID().uuidString
            let keychain = try Keychain(path: path)
            try keychain.setPassword(deleted, service: "s", account: "gone")
            try keychain.setPassword(replaced, service: "s", account: "changed")
            try keychain.synchronizeBlocking()
            // Another process's connection, open (not inside a transaction) for the rest of the test.
            let other = try SQLiteConnection(readingOnly: path, busyTimeoutMilliseconds: 1000)
            #expect(try other.integer("SELECT count(*) FROM items") == 2)
            try keychain.deletePassword(service: "s", account: "gone")
            try keychain.setPassword("new value", service: "s", account: "changed")
            try keychain.synchronizeBlocking()
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
                let data = try Data(contentsOf: directory.appendingPathComponent(name))
                #expect(data.range(of: Data(deleted.utf8)) == nil, "\(name) still holds the deleted value")
                #expect(data.range(of: Data(replaced.utf8)) == nil, "\(name) still holds the replaced value")
            }
            #expect(try other.integer("SELECT count(*) FROM items") == 1)
            try keychain.close()
            #expect(try Keychain(path: path).password(service: "s", account: "changed") == "new value")
        }
    }
}
