#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SFTestSupport
import Testing
@testable import SecureKeychain

/// Crash and multi-process tests. The child is the test helper `sf-keychain-stress`
/// (Sources/KeychainStress), which prints `synced N` after each completed synchronize() (writes
/// 0..<N acknowledged as durable); the parent checks every acknowledged write.
// Runs the helper built beside the tests as child processes: skipped when it was not built, a
// failure under CI (the same condition as the sf binary's).
@Suite(.serialized, .requiresSFBinary)
struct FaultTests {
    /// The value the stress writer stores at `index` (as in Sources/KeychainStress/main.swift).
    static func value(tag: String, index: Int) -> String { "\(tag):\(index):" + String(repeating: "v", count: index % 64) }

    static func sf() throws -> URL {
        try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests -Xcc -O2)")
    }

    static func stressWriter() throws -> URL {
        try #require(TestSupport.builtExecutable("sf-keychain-stress"), "sf-keychain-stress is built with the tests (swift build --build-tests -Xcc -O2)")
    }

    static func writer(_ sf: URL, _ path: String, _ arguments: [String]) -> Process {
        let process = Process()
        process.executableURL = sf
        process.arguments = ["--keychain", path] + arguments
        process.standardError = FileHandle.nullDevice
        return process
    }

    /// The highest N of the complete `synced N` lines in `output`.
    static func acknowledged(_ output: Data) -> Int {
        String(decoding: output, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .compactMap { $0.hasPrefix("synced ") ? Int($0.dropFirst(7)) : nil }.max() ?? 0
    }

    @Test func killedWriterNeverLosesAcknowledgedWrites() async throws {
        let sf = try Self.stressWriter()
        try await withKeychainDirectory { _, path in
            var acknowledgedByTrial: [Int] = []
            var generator = SystemRandomNumberGenerator()
            for trial in 0..<50 {
                let prefix = "t\(trial)-"
                let process = Self.writer(sf, path, ["--prefix", prefix, "--sync-every", "\(Int.random(in: 1...60, using: &generator))"])
                let output = Pipe()
                process.standardOutput = output
                try process.run()
                usleep(UInt32.random(in: 5_000...250_000, using: &generator))
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                #expect(process.terminationReason == .uncaughtSignal)
                acknowledgedByTrial.append(Self.acknowledged(output.fileHandleForReading.readDataToEndOfFile()))

                guard FileManager.default.fileExists(atPath: path) else {
                    #expect(acknowledgedByTrial.last == 0, "acknowledged writes but no file")
                    continue  // killed before the child created the file
                }
                try Keychain.checkIntegrity(path: path)
                let keychain = try Keychain(path: path)
                for (earlier, acknowledged) in acknowledgedByTrial.enumerated() {
                    for index in 0..<acknowledged {
                        let value = try? keychain.password(service: "stress", account: "t\(earlier)-\(index)")
                        guard value == Self.value(tag: "t\(earlier)-", index: index) else {
                            Issue.record("trial \(earlier): acknowledged write \(index) is \(value ?? "missing") after kill \(trial)")
                            return
                        }
                    }
                }
                // Unacknowledged writes may or may not have landed, but never with a wrong value.
                for item in keychain.items(matching: KeychainQuery(service: "stress", account: nil))
                where item.identity.account.hasPrefix(prefix) {
                    let index = Int(item.identity.account.dropFirst(prefix.count)) ?? -1
                    #expect(String(decoding: item.value, as: UTF8.self) == Self.value(tag: prefix, index: index))
                }
                try keychain.close()
            }
            #expect(acknowledgedByTrial.reduce(0, +) > 0, "no trial reached a synchronize; the test proved nothing")
            print("kill trials: \(acknowledgedByTrial.filter { $0 > 0 }.count) of 50 killed after acknowledgements; "
                + "acknowledged writes: \(acknowledgedByTrial.reduce(0, +))")
        }
    }

    @Test func concurrentProcessesLoseNoUpdates() async throws {
        let sf = try Self.stressWriter()
        try await withKeychainDirectory { _, path in
            let count = 3_000, shared = 200
            let writers = [
                Self.writer(sf, path, ["--prefix", "a-", "--count", "\(count)"]),
                Self.writer(sf, path, ["--prefix", "b-", "--count", "\(count)"]),
                Self.writer(sf, path, ["--prefix", "shared-", "--tag", "C", "--count", "\(count)", "--accounts", "\(shared)"]),
                Self.writer(sf, path, ["--prefix", "shared-", "--tag", "D", "--count", "\(count)", "--accounts", "\(shared)"]),
            ]
            for writer in writers { writer.standardOutput = FileHandle.nullDevice; try writer.run() }
            for writer in writers {
                writer.waitUntilExit()
                #expect(writer.terminationStatus == 0)
            }
            try Keychain.checkIntegrity(path: path)
            let keychain = try Keychain(path: path)
            for prefix in ["a-", "b-"] {
                for index in 0..<count {
                    let value = try? keychain.password(service: "stress", account: "\(prefix)\(index)")
                    guard value == Self.value(tag: prefix, index: index) else {
                        Issue.record("\(prefix)\(index) is \(value ?? "missing")")
                        return
                    }
                }
            }
            #expect(keychain.items(matching: KeychainQuery(service: "stress")).count == 2 * count + shared)
            for account in 0..<shared {
                // Each writer's last write to this account; the file holds one of them, whole.
                let last = count - shared + account
                let value = try keychain.password(service: "stress", account: "shared-\(account)")
                #expect([Self.value(tag: "C", index: last), Self.value(tag: "D", index: last)].contains(value))
            }
        }
    }
}
