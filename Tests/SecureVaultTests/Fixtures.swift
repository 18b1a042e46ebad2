import Foundation
import SFTestSupport
import SecureCore
import SecureKeychain
import SecureVault
import Testing

/// A tiny scrypt cost so tests can run thousands of attempts (the default-cost check is separate).
let testKDF = PasswordKDF.scrypt(logN: 4, r: 1, p: 1)
let testQuestions = ["First pet?", "Street you grew up on?"]
let testAnswers = ["Rex", "Elm Street"]

func secret(_ text: String) -> SecretBytes { SecretBytes(Data(text.utf8)) }

/// A clock the tests move by hand.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date(timeIntervalSince1970: 1_800_000_000)
    var now: Date { lock.withLock { current } }
    func advance(_ seconds: Double) { lock.withLock { current += seconds } }
}

func configuration(throttling: Vault.Throttling? = Vault.Throttling(), clock: TestClock? = nil) -> Vault.Configuration {
    var configuration = Vault.Configuration(kdf: testKDF)
    configuration.throttling = throttling
    if let clock { configuration.now = { clock.now } }
    return configuration
}

/// A scratch directory holding a keychain file, removed afterwards.
final class VaultScratch: ScratchDirectory, @unchecked Sendable {
    var directory: URL { url }
    var keychainPath: String { path("keychain.db") }

    init() throws { try super.init("sf-vault") }

    func keychain() throws -> Keychain { try Keychain(path: keychainPath) }

    /// A set-up vault (unlocked) with the test questions, passcode "old passcode".
    func setUpVault(_ configuration: Vault.Configuration = configuration()) throws -> Vault {
        let vault = Vault(keychain: try keychain(), configuration: configuration)
        try vault.setUp(passcode: secret("old passcode"), questions: testQuestions, answers: testAnswers)
        return vault
    }
}

/// Runs `body` and returns the VaultError it threw, or nil.
func vaultError(_ body: () throws -> Void) -> VaultError? {
    do {
        try body()
        return nil
    } catch let error as VaultError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}
