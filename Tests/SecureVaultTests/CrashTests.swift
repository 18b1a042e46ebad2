import Foundation
import SFTestSupport
import SecureCore
import SecureKeychain
import SecureVault
import Testing

/// Kills `sf vault change-passcode` at random points: afterwards exactly one of the old and new
/// passcodes unlocks, and data sealed before still decrypts.
@Suite struct CrashTests {
    @Test func killedPasscodeChangeLeavesExactlyOnePasscodeWorking() throws {
        let sf = try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests -Xcc -O2)")
        let scratch = try VaultScratch()
        let setUp = try scratch.setUpVault()
        let sealed = try setUp.encrypt(Data("durable".utf8))
        try setUp.keychain.close()
        var current = "old passcode"
        func change(to next: String) throws -> Process {
            let process = Process()
            process.executableURL = sf
            process.arguments = [
                "vault", "change-passcode", "--keychain", scratch.keychainPath,
                "--passcode-file", try scratch.write("current", current + "\n"),
                "--new-passcode-file", try scratch.write("next", next + "\n"),
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            return process
        }

        // One uninterrupted change measures how long a change takes here.
        let start = ContinuousClock.now
        let full = try change(to: "passcode 0")
        try full.run()
        full.waitUntilExit()
        #expect(full.terminationStatus == 0)
        current = "passcode 0"
        let window = Int(((ContinuousClock.now - start).seconds * 1.3 * 1_000_000).rounded())

        var outcomes = (old: 0, new: 0)
        var generator = SystemRandomNumberGenerator()
        for trial in 1...40 {
            let next = "passcode \(trial)"
            let process = try change(to: next)
            try process.run()
            usleep(UInt32(Int.random(in: 0...max(window, 1_000), using: &generator)))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()

            let keychain = try scratch.keychain()
            let vault = Vault(keychain: keychain, configuration: configuration(throttling: nil))
            let oldWorks = vaultError { try vault.unlock(passcode: secret(current)) } == nil
            vault.purge()
            let newWorks = vaultError { try vault.unlock(passcode: secret(next)) } == nil
            #expect(oldWorks != newWorks, "trial \(trial): old unlocks \(oldWorks), new unlocks \(newWorks)")
            vault.purge()
            try vault.unlock(passcode: secret(newWorks ? next : current))
            #expect(try vault.decrypt(sealed) == Data("durable".utf8))
            try keychain.close()
            if newWorks {
                current = next
                outcomes.new += 1
            } else {
                outcomes.old += 1
            }
        }
        print("passcode-change kill trials: \(outcomes.old) kept the old passcode, \(outcomes.new) the new one")
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
