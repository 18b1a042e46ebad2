import Foundation
import SFTestSupport
import SQLiteSupport
import SecureCore
import Testing
@testable import SecureKeychain

@Suite struct CoalescingTests {
    /// A flush that fails while the keychain closes (another process holds the write lock past the
    /// busy timeout) fails every waiter, also one for a later change the close drops, and `close()`
    /// returns: before, that waiter stayed, the writer refreshed for it without end, and `close()`
    /// never returned.
    @Test func aFlushFailingWhileClosingFailsEveryWaiter() throws {
        let directory = try TestSupport.temporaryDirectory("keychain-close")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("k.db").path
        var configuration = Keychain.Configuration()
        configuration.busyTimeout = .seconds(2)
        configuration.busyRetries = 0
        let keychain = try Keychain(path: path, configuration: configuration)
        try keychain.synchronizeBlocking()
        let blocker = try SQLiteConnection.openDurable(path: path, busyTimeoutMilliseconds: 2_000)
        try blocker.execute("BEGIN IMMEDIATE")
        try keychain.setPassword("a", service: "s", account: "a")
        // Let the writer take that change into a flush that now waits on the lock, then queue one
        // more, a synchronize that waits for it, and the close.
        Thread.sleep(forTimeInterval: 0.3)
        try keychain.setPassword("b", service: "s", account: "b")
        let outcomes = Locked<[String: Bool]>([:])
        let done = DispatchGroup()
        for name in ["synchronize", "close"] {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                let failed = (try? name == "close" ? keychain.close() : keychain.synchronizeBlocking()) == nil
                outcomes.withLock { $0[name] = failed }
            }
            if name == "synchronize" { Thread.sleep(forTimeInterval: 0.1) }
        }
        // The flush fails after its 2 s busy timeout; 60 s is the backstop of a hang.
        let ended = done.wait(timeout: .now() + 60) == .success
        try blocker.execute("ROLLBACK")
        #expect(ended, "synchronize or close did not return")
        #expect(outcomes.withLock { $0 } == ["synchronize": true, "close": true])
    }

    @Test func tenThousandWritesAreDurableAfterSynchronize() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            for index in 0..<10_000 { try keychain.setPassword("value \(index)", service: "s\(index % 7)", account: "a\(index)") }
            try await keychain.synchronize()
            // A second connection reads the file itself (the first is still open, nothing closed yet).
            let other = try Keychain(path: path)
            #expect(other.items(matching: KeychainQuery()).count == 10_000)
            for index in stride(from: 0, to: 10_000, by: 1) {
                let value = try other.password(service: "s\(index % 7)", account: "a\(index)")
                if value != "value \(index)" { Issue.record("a\(index): \(value)"); break }
            }
            try keychain.close()
            try other.close()
            try Keychain.checkIntegrity(path: path)
        }
    }

    @Test func closeFlushesPendingWrites() async throws {
        try await withKeychainDirectory { _, path in
            var configuration = Keychain.Configuration()
            configuration.writeDelay = .seconds(3600)
            let keychain = try Keychain(path: path, configuration: configuration)
            try keychain.setPassword("x", service: "s", account: "a")
            try keychain.close()
            #expect(try Keychain(path: path).password(service: "s", account: "a") == "x")
        }
    }

    /// "Never" spelt as the longest duration, for each of the three: the conversion to
    /// nanoseconds, and the clock reading plus it, trapped.
    @Test func theLongestDurationsMeanNever() async throws {
        try await withKeychainDirectory { _, path in
            var configuration = Keychain.Configuration()
            configuration.writeDelay = .seconds(Int64.max)
            configuration.pollInterval = .seconds(Int64.max)
            configuration.busyTimeout = .seconds(Int64.max)
            let keychain = try Keychain(path: path, configuration: configuration)
            try keychain.setPassword("x", service: "s", account: "a")
            #expect(try Keychain(path: path).items(matching: KeychainQuery()).isEmpty)  // still coalescing
            #expect(try keychain.password(service: "s", account: "a") == "x")
            try keychain.close()
            #expect(try Keychain(path: path).password(service: "s", account: "a") == "x")
        }
    }

    @Test func nothingIsWrittenBeforeTheDelayWithoutSynchronize() async throws {
        try await withKeychainDirectory { _, path in
            var configuration = Keychain.Configuration()
            configuration.writeDelay = .seconds(3600)
            let keychain = try Keychain(path: path, configuration: configuration)
            try keychain.setPassword("x", service: "s", account: "a")
            #expect(try keychain.password(service: "s", account: "a") == "x")  // read-your-writes
            #expect(try Keychain(path: path).items(matching: KeychainQuery()).isEmpty)  // still coalescing
            try keychain.synchronizeBlocking()
            #expect(try Keychain(path: path).password(service: "s", account: "a") == "x")
        }
    }

    @Test func fullBatchIsWrittenWithoutWaitingForTheDelay() async throws {
        try await withKeychainDirectory { _, path in
            var configuration = Keychain.Configuration()
            configuration.writeDelay = .seconds(3600)
            configuration.maximumBatch = 100
            let keychain = try Keychain(path: path, configuration: configuration)
            for index in 0..<100 { try keychain.setPassword("x", service: "s", account: "\(index)") }
            let other = try Keychain(path: path)
            for _ in 0..<500 where other.items(matching: KeychainQuery()).count < 100 {
                try await Task.sleep(for: .milliseconds(10))
                try await other.synchronize()
            }
            #expect(other.items(matching: KeychainQuery()).count == 100)
        }
    }

    @Test func immediateModeWritesThroughPerCall() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path, configuration: .immediate)
            let other = try Keychain(path: path)
            try keychain.setPassword("x", service: "s", account: "a")
            try await other.synchronize()
            #expect(try other.password(service: "s", account: "a") == "x")
            try keychain.deletePassword(service: "s", account: "a")
            try await other.synchronize()
            #expect(other.accounts(service: "s").isEmpty)
        }
    }

    @Test func readsDuringAWriteStormSeeConsistentValues() async throws {
        try await withKeychainDirectory { _, path in
            var configuration = Keychain.Configuration()
            configuration.writeDelay = .milliseconds(1)
            configuration.maximumBatch = 500
            let keychain = try Keychain(path: path, configuration: configuration)
            for index in 0..<1_000 { try keychain.setPassword("stable \(index)", service: "stable", account: "\(index)") }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<2 {
                    group.addTask {
                        for index in 0..<5_000 {
                            try keychain.setPassword("w\(writer) \(index)", service: "storm\(writer)", account: "\(index % 700)")
                            // Read-your-writes on the writing thread.
                            let read = try keychain.password(service: "storm\(writer)", account: "\(index % 700)")
                            if read != "w\(writer) \(index)" { Issue.record("read \(read) after writing \(index)") }
                            if index % 1_000 == 0 { try await keychain.synchronize() }
                        }
                    }
                }
                group.addTask {
                    for round in 0..<20_000 {
                        let index = round % 1_000
                        let read = try keychain.password(service: "stable", account: "\(index)")
                        if read != "stable \(index)" { Issue.record("stable \(index) read \(read)") }
                    }
                }
                try await group.waitForAll()
            }
            try await keychain.synchronize()
            let reopened = try Keychain(path: path)
            for writer in 0..<2 {
                #expect(reopened.accounts(service: "storm\(writer)").count == 700)
                // The last write to account k is index 4300 + k (k < 700).
                #expect(try reopened.password(service: "storm\(writer)", account: "5") == "w\(writer) 4905")
            }
            #expect(reopened.accounts(service: "stable").count == 1_000)
        }
    }

    @Test func twoInstancesSeeEachOthersSynchronizedWrites() async throws {
        try await withKeychainDirectory { _, path in
            let first = try Keychain(path: path)
            let second = try Keychain(path: path)
            try first.setPassword("from first", service: "s", account: "1")
            try second.setPassword("from second", service: "s", account: "2")
            try await first.synchronize()
            try await second.synchronize()  // writes "2", sees "1"
            try await first.synchronize()  // sees "2"
            for keychain in [first, second] {
                #expect(try keychain.password(service: "s", account: "1") == "from first")
                #expect(try keychain.password(service: "s", account: "2") == "from second")
            }
            try first.deletePassword(service: "s", account: "2")
            try await first.synchronize()
            try await second.synchronize()
            #expect(second.accounts(service: "s") == ["1"])
        }
    }

    /// Issue 13: no thread wakes for an idle keychain; a read after the poll interval checks the
    /// file once (and sees another process's change).
    @Test func idleKeychainDoesNotPollAndAReadChecksTheFile() async throws {
        try await withKeychainDirectory { _, path in
            var configuration = Keychain.Configuration()
            configuration.pollInterval = .milliseconds(20)
            let idle = try Keychain(path: path, configuration: configuration)
            let checks = { idle.engine.state.withLock { $0.checks } }
            let before = checks()
            try await Task.sleep(for: .milliseconds(300))  // fifteen poll intervals, nobody reading
            #expect(checks() == before, "the idle keychain checked the file without a read")
            let writer = try Keychain(path: path)
            try writer.setPassword("x", service: "s", account: "a")
            try await writer.synchronize()
            #expect(try idle.password(service: "s", account: "a") == "x")
            #expect(checks() == before + 1)
            // Reads within the poll interval are served from memory, without another check.
            _ = idle.accounts(service: "s")
            #expect(checks() <= before + 2)
        }
    }

    /// A change is checked against the file as a read is: another process's sealed item, written
    /// since the view was last checked, is not overwritten in clear by `setPassword`.
    @Test func aChangeIsCheckedAgainstOtherProcessesChanges() async throws {
        try await withKeychainDirectory { _, path in
            var configuration = Keychain.Configuration()
            configuration.pollInterval = .zero  // every change checks the file first
            let idle = try Keychain(path: path, configuration: configuration)
            #expect(idle.accounts(service: "s").isEmpty)
            let writer = try Keychain(path: path)
            let sealer = try KeyItemSealer(key: SecretBytes.random(count: 32))
            try writer.setSecurePassword("sealed", service: "s", account: "a", sealer: sealer)
            try await writer.synchronize()
            expectError(.protectionMismatch(service: "s", account: "a", isSealed: true)) { try idle.setPassword("clear", service: "s", account: "a") }
            try await idle.synchronize()
            #expect(try Keychain(path: path).securePassword(service: "s", account: "a", sealer: sealer) == "sealed")
        }
    }

    @Test func idleInstancePicksUpExternalChangesByPolling() async throws {
        try await withKeychainDirectory { _, path in
            var configuration = Keychain.Configuration()
            configuration.pollInterval = .milliseconds(20)
            let watcher = try Keychain(path: path, configuration: configuration)
            let writer = try Keychain(path: path)
            try writer.setPassword("x", service: "s", account: "a")
            try await writer.synchronize()
            for _ in 0..<3000 where watcher.accounts(service: "s").isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            #expect(try watcher.password(service: "s", account: "a") == "x")
        }
    }
}
