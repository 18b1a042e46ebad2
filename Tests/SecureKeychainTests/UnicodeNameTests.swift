import Foundation
import SecureCore
import Testing

@testable import SecureKeychain

/// Canonically equivalent names (NFC "é" and NFD "e" + U+0301) are one item in memory, in the file
/// and in the sealed-value binding, so a delete or update never misses the stored row.
@Suite struct UnicodeNameTests {
    let nfc = "caf\u{e9}", nfd = "cafe\u{301}"

    @Test func deleteAndUpdateThroughTheOtherSpellingSurviveReopen() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setPassword("first", service: nfc, account: nfd)
            try keychain.setPassword("second", service: nfd, account: nfc)
            try keychain.synchronizeBlocking()
            try keychain.close()

            let reopened = try Keychain(path: path)
            #expect(try reopened.password(service: nfc, account: nfc) == "second")
            #expect(reopened.accounts(service: nfd).count == 1)
            try reopened.deletePassword(service: nfd, account: nfd)
            try reopened.synchronizeBlocking()
            try reopened.close()

            let again = try Keychain(path: path)
            #expect(throws: KeychainError.self) { try again.password(service: nfc, account: nfc) }
            try again.close()
        }
    }

    /// Names newer than Foundation's Unicode data: U+113C5 and U+113C2 U+113C2 (a Unicode 16.0
    /// composition) are equal Swift strings, so they must be one item in the file and in sealed
    /// bindings too (with Foundation's NFC, Unicode 15.1, they were one item in memory only).
    @Test func unicode16CompositionIsOneItemEverywhere() async throws {
        let composed = "\u{113C5}", decomposed = "\u{113C2}\u{113C2}"
        #expect(Array(KeychainItem.Identity(service: decomposed, account: "a").service.unicodeScalars) == ["\u{113C5}"])
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            let sealer = try KeyItemSealer(key: .random(count: 32))
            try keychain.setSecurePassword("pin", service: decomposed, account: "ada", sealer: sealer)
            try keychain.setPassword("clear", service: decomposed, account: "bob")
            try keychain.setPassword("gone", service: composed, account: "cy")
            #expect(try keychain.securePassword(service: composed, account: "ada", sealer: sealer) == "pin")
            try keychain.deletePassword(service: decomposed, account: "cy")
            try keychain.synchronizeBlocking()
            try keychain.close()

            let reopened = try Keychain(path: path)
            #expect(try reopened.securePassword(service: composed, account: "ada", sealer: sealer) == "pin")
            #expect(try reopened.password(service: composed, account: "bob") == "clear")
            #expect(throws: KeychainError.self) { try reopened.password(service: composed, account: "cy") }
            #expect(reopened.accounts(service: decomposed).sorted() == ["ada", "bob"])
            try reopened.close()
        }
    }

    @Test func sealedValueBindingIgnoresTheSpelling() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            let sealer = try KeyItemSealer(key: .random(count: 32))
            try keychain.setSecurePassword("pin", service: nfc, account: "ada", sealer: sealer)
            #expect(try keychain.securePassword(service: nfd, account: "ada", sealer: sealer) == "pin")
            try keychain.close()
        }
    }
}
