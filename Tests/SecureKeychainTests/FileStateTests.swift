import Foundation
import SFTestSupport
import Testing
@testable import SecureKeychain

/// Issue 12 item 17: truncated and loosely permitted keychain files.
@Suite struct FileStateTests {
    private func mode(_ path: String) -> mode_t {
        var status = stat()
        return stat(path, &status) == 0 ? status.st_mode & 0o777 : 0
    }

    @Test func aTruncatedKeychainIsRefusedNotStartedAfresh() async throws {
        try await withKeychainDirectory { directory, path in
            let keychain = try Keychain(path: path)
            try keychain.setPassword("pw", service: "s", account: "a")
            try keychain.close()
            #expect(truncate(path, 0) == 0)
            do {
                _ = try Keychain(path: path)
                Issue.record("a 0-byte keychain was opened")
            } catch {
                guard case .corrupted(_, let details)? = error as? KeychainError else { Issue.record("unexpected \(error)"); return }
                #expect(details.contains("empty"))
            }
            var status = stat()
            #expect(stat(path, &status) == 0 && status.st_size == 0, "the truncated file was left as it was")
            do {
                let sf = try FaultTests.sf()
                let result = try TestSupport.run(sf.path, ["keychain", "list", "--keychain", path])
                #expect(result.status == 1 && result.stderrText.contains("empty"))
            }
            _ = directory
        }
    }

    @Test func aNewKeychainIsCreatedWholeWithMode0600() async throws {
        try await withKeychainDirectory { directory, path in
            let keychain = try Keychain(path: path)
            #expect(mode(path) == 0o600)
            var status = stat()
            #expect(stat(path, &status) == 0 && status.st_size > 0)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(!names.contains { $0.contains(".new-") })
            try keychain.close()
        }
    }

    @Test func aLooseModeIsNarrowedToTheOwner() async throws {
        try await withKeychainDirectory { _, path in
            try Keychain(path: path).close()
            #expect(chmod(path, 0o644) == 0)
            let keychain = try Keychain(path: path)
            #expect(mode(path) == 0o600)
            try keychain.setPassword("x", service: "s", account: "a")
            try keychain.synchronizeBlocking()
            if FileManager.default.fileExists(atPath: path + "-wal") { #expect(mode(path + "-wal") == 0o600) }
            try keychain.close()
        }
    }
}
