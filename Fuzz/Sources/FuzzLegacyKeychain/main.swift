import Foundation
import FuzzSupport
import SecureKeychain

// iMAS legacy keychain files (binary or XML property lists: service → account → password), imported
// into a throw-away keychain in a scratch directory, which is emptied after each input.
let scratch = Fuzz.scratchDirectory("keychain")
let keychain = try! Keychain(path: scratch + "/keychain.db")
Fuzz.main { input in
    _ = try? keychain.importLegacy(input, overwrite: true)
    _ = try? keychain.delete(KeychainQuery())
}
