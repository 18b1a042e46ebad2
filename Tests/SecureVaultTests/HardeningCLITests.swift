import Foundation
import SFTestSupport
import SecureCore
import SecureKeychain
import SecureVault
import Testing

/// Issue 12 findings reproduced through the built `sf` binary.
@Suite struct HardeningCLITests {
    func sf(_ arguments: [String], stdin: Data = Data()) throws -> ProcessResult {
        let binary = try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests -Xcc -O2)")
        return try TestSupport.run(binary.path, arguments, stdin: stdin)
    }

    /// A scratch vault set up through the CLI, with its passcode file.
    func initializedVault() throws -> (VaultScratch, [String], String) {
        let scratch = try VaultScratch()
        let kc = ["--keychain", scratch.keychainPath]
        let passcode = try scratch.write("passcode", "correct horse\n")
        let questions = try scratch.write("questions", "First pet?\n")
        let answers = try scratch.write("answers", "Rex\n")
        let result = try sf(["vault", "init"] + kc + ["--passcode-file", passcode, "--questions-file", questions, "--answers-file", answers])
        #expect(result.status == 0, "\(result.stderrText)")
        return (scratch, kc, passcode)
    }

    /// Item 4: `sf keychain set` without --secure never stores a sealed item's new value in clear.
    @Test func clearSetOnASealedItemIsRefusedWithAHint() throws {
        let (scratch, kc, passcode) = try initializedVault()
        var result = try sf(["keychain", "set", "--secure"] + kc + ["--service", "mail", "--account", "me", "--passcode-file", passcode], stdin: Data("pw1\n".utf8))
        #expect(result.status == 0, "\(result.stderrText)")
        result = try sf(["keychain", "set"] + kc + ["--service", "mail", "--account", "me"], stdin: Data("downgraded\n".utf8))
        #expect(result.status == 1)
        #expect(result.stderrText.contains("--secure"))
        let file = try Data(contentsOf: URL(fileURLWithPath: scratch.keychainPath))
        #expect(file.range(of: Data("downgraded".utf8)) == nil)
        result = try sf(["keychain", "get", "--secure"] + kc + ["--service", "mail", "--account", "me", "--passcode-file", passcode])
        #expect(result.status == 0 && result.stdoutText == "pw1\n")
    }
}

/// Issue 12 item 7: the vault's own items are not ordinary keychain items.
@Suite struct InternalItemTests {
    func sf(_ arguments: [String], stdin: Data = Data()) throws -> ProcessResult {
        let binary = try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests -Xcc -O2)")
        return try TestSupport.run(binary.path, arguments, stdin: stdin)
    }

    @Test func cliCannotListDeleteOrOverwriteTheVaultState() throws {
        let (scratch, kc, passcode) = try HardeningCLITests().initializedVault()
        var result = try sf(["keychain", "set"] + kc + ["--service", "web", "--account", "ann"], stdin: Data("pw\n".utf8))
        #expect(result.status == 0)
        result = try sf(["keychain", "list"] + kc)
        #expect(result.stdoutText == "web\tann\n")
        result = try sf(["keychain", "delete"] + kc + ["--service", "SecureFoundation.vault", "--account", "default"])
        #expect(result.status == 1)
        #expect(result.stderrText.contains("internal"))
        result = try sf(["keychain", "set"] + kc + ["--service", "SecureFoundation.vault", "--account", "default"], stdin: Data("{}\n".utf8))
        #expect(result.status == 1)
        result = try sf(["keychain", "delete"] + kc + ["--service", "securefoundation.VAULT.attempts", "--account", "default"])
        #expect(result.status == 1)
        result = try sf(["vault", "encrypt"] + kc + ["--passcode-file", passcode], stdin: Data("still works".utf8))
        #expect(result.status == 0, "\(result.stderrText)")
        _ = scratch
    }

    @Test func libraryLeavesInternalItemsOutOfBroadQueriesAndRefusesNamedOnes() throws {
        let scratch = try VaultScratch()
        let vault = try scratch.setUpVault()
        let keychain = vault.keychain
        try keychain.setPassword("x", service: "web", account: "ann")
        #expect(keychain.accountsByService().keys.sorted() == ["web"])
        #expect(keychain.items(matching: KeychainQuery()).map(\.identity.service) == ["web"])
        #expect(keychain.items(matching: KeychainQuery(service: Vault.stateService)).count == 1)
        #expect(throws: KeychainError.internalItem(service: Vault.stateService, account: "default")) {
            try keychain.deletePassword(service: Vault.stateService, account: "default")
        }
        #expect(throws: KeychainError.internalItem(service: Vault.stateService, account: "default")) {
            try keychain.setPassword("{}", service: Vault.stateService, account: "default", changingProtection: true)
        }
        #expect(throws: KeychainError.internalItem(service: Vault.stateService, account: nil)) {
            try keychain.update(KeychainQuery(service: Vault.stateService), value: Data())
        }
        #expect(throws: KeychainError.internalItem(service: Vault.stateService, account: "default")) {
            try keychain.delete([KeychainItem.Identity(service: Vault.stateService, account: "default")])
        }
        // A delete of everything leaves the vault alone.
        #expect(try keychain.delete(KeychainQuery()) == 1)
        vault.purge()
        try vault.unlock(passcode: secret("old passcode"))
    }
}

/// Issue 12 item 16: a truncated state item is reported as corruption by every command.
@Suite struct CorruptStateTests {
    func sf(_ arguments: [String], stdin: Data = Data()) throws -> ProcessResult {
        let binary = try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests -Xcc -O2)")
        return try TestSupport.run(binary.path, arguments, stdin: stdin)
    }

    @Test func truncatedStateIsCorruptForStatusDecryptInitAndTheLibrary() throws {
        let (scratch, kc, passcode) = try HardeningCLITests().initializedVault()
        let keychain = try scratch.keychain()
        let state = try keychain.passwordData(service: Vault.stateService, account: "default")
        try keychain.setInternalItem(state.prefix(state.count / 2), service: Vault.stateService, account: "default")
        try keychain.close()

        let vault = Vault(keychain: try scratch.keychain())
        #expect(try vault.setUpStatus() == .corrupt("not a vault state item"))
        #expect(vaultError { try vault.requireSetUp() } == .corruptState("not a vault state item"))
        #expect(vaultError { try vault.setUp(passcode: secret("p"), questions: ["Q?"], answers: ["A"]) } == .corruptState("not a vault state item"))

        let questions = try scratch.write("q", "Q?\n"), answers = try scratch.write("a", "A\n")
        let commands: [[String]] = [
            ["vault", "status"] + kc,
            ["vault", "decrypt"] + kc + ["--passcode-file", passcode],
            ["vault", "encrypt"] + kc + ["--passcode-file", passcode],
            ["vault", "init"] + kc + ["--passcode-file", passcode, "--questions-file", questions, "--answers-file", answers],
            ["vault", "recover"] + kc + ["--answers-file", answers, "--new-passcode-file", passcode],
        ]
        for arguments in commands {
            let result = try sf(arguments, stdin: Data("x".utf8))
            #expect(result.status == 1, "\(arguments[1])")
            #expect(result.stderrText.contains("the stored vault state is not valid"), "\(arguments[1]): \(result.stderrText)")
            #expect(!result.stderrText.contains("not set up") && !result.stderrText.contains("already set up"))
            #expect(!result.stdoutText.contains("not set up"))
        }
    }
}
