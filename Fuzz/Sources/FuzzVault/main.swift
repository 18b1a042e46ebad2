import Foundation
import FuzzSupport
import SecureCore
import SecureKeychain
import SecureVault

// SFV1 vault-sealed data, opened by Vault.decrypt on a throw-away vault (its own keychain file in a
// scratch directory, scrypt logN 4, set up and unlocked once per process). The vault's application
// key is random per process, so seeds are well-formed SFV1 but do not authenticate across runs:
// this target covers the SFV1 framing and key-id lookup; the envelope inside is FuzzEnvelope's.
let scratch = Fuzz.scratchDirectory("vault")
var configuration = Vault.Configuration(kdf: .scrypt(logN: 4, r: 1, p: 1))
configuration.throttling = nil
let vault = Vault(keychain: try! Keychain(path: scratch + "/keychain.db"), configuration: configuration)
try! vault.setUp(passcode: SecretBytes(Data("fuzz passcode".utf8)), questions: ["q"], answers: ["a"])

Fuzz.main(seeds: {
    try [Data(), Data("hello vault".utf8)].flatMap { plaintext in
        [try vault.encrypt(plaintext), try vault.encrypt(plaintext, context: Data("ctx".utf8))]
    }
}) { input in
    _ = try? vault.decrypt(input)
    _ = try? vault.decrypt(input, context: Data("ctx".utf8))
}
