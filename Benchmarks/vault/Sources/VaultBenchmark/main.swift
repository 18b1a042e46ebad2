import Dispatch
import Foundation
import SecureCore
import SecureKeychain
import SecureVault

// Usage: VaultBenchmark <scratch directory>
// Prints the unlock time with the default parameters (scrypt logN 17, r 8, p 1) and vault
// encrypt/decrypt throughput for 4 KiB records on one thread and on every core.

let directory = CommandLine.arguments.dropFirst().first ?? NSTemporaryDirectory()
let keychain = try Keychain(path: directory + "/vault-bench.db")
var configuration = Vault.Configuration()
configuration.throttling = nil
let vault = Vault(keychain: keychain, configuration: configuration)
let passcode = SecretBytes(Data("benchmark passcode".utf8))
try vault.setUp(passcode: passcode, questions: ["q"], answers: ["a"])

let clock = ContinuousClock()
func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

var unlockTimes: [Double] = []
for _ in 0..<5 {
    vault.purge()
    unlockTimes.append(seconds(try clock.measure { try vault.unlock(passcode: passcode) }))
}
unlockTimes.sort()
print(String(format: "unlock (scrypt logN 17, r 8, p 1): median %.1f ms (min %.1f, max %.1f) over 5", unlockTimes[2] * 1000, unlockTimes[0] * 1000, unlockTimes[4] * 1000))

let record = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0) })
let sealed = try vault.encrypt(record)

func throughput(threads: Int, operations: Int, _ body: @escaping @Sendable () throws -> Void) -> Double {
    let elapsed = clock.measure {
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<operations / threads { try! body() }
        }
    }
    return Double(operations) / seconds(elapsed)
}

let cores = ProcessInfo.processInfo.activeProcessorCount
let operations = 400_000
for threads in Set([1, cores]).sorted() {
    let encrypt = throughput(threads: threads, operations: operations) { _ = try vault.encrypt(record) }
    let decrypt = throughput(threads: threads, operations: operations) { _ = try vault.decrypt(sealed) }
    print(String(format: "vault encrypt 4 KiB, %d thread(s): %.0f ops/s", threads, encrypt))
    print(String(format: "vault decrypt 4 KiB, %d thread(s): %.0f ops/s", threads, decrypt))
}
try keychain.close()
