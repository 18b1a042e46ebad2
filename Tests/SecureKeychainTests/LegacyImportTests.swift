import Foundation
import SFTestSupport
import SecureCore
import Testing
@testable import SecureKeychain

@Suite struct LegacyImportTests {
    static var legacy: [String: Any] {
        [
        "mail": ["ann": Data("ann-pw".utf8), "bob": Data([0, 0xFF])],
        "chat ✓": ["名前": "text password"],
        ]
    }

    @Test(arguments: [PropertyListSerialization.PropertyListFormat.binary, .xml])
    func importsBinaryAndXMLFiles(format: PropertyListSerialization.PropertyListFormat) async throws {
        let file = try PropertyListSerialization.data(fromPropertyList: Self.legacy, format: format, options: 0)
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setPassword("kept", service: "mail", account: "ann")
            #expect(try keychain.importLegacy(file) == .init(imported: 2, skipped: 1))
            #expect(try keychain.password(service: "mail", account: "ann") == "kept")
            #expect(try keychain.passwordData(service: "mail", account: "bob") == Data([0, 0xFF]))
            #expect(try keychain.password(service: "chat ✓", account: "名前") == "text password")
            #expect(try keychain.importLegacy(file, overwrite: true) == .init(imported: 3, skipped: 0))
            #expect(try keychain.password(service: "mail", account: "ann") == "ann-pw")
        }
    }

    /// Issue 21: an import that fails part-way (here: with `overwrite`, a clear legacy password would
    /// replace a secure item) used to keep the entries written before the failure. It is all or
    /// nothing: the keychain, in memory and in the file, is as before.
    @Test func aFailedImportChangesNothing() async throws {
        let file = try PropertyListSerialization.data(
            fromPropertyList: ["a": ["first": Data("1".utf8)], "m": ["sealed": Data("2".utf8)], "z": ["last": Data("3".utf8)]],
            format: .binary, options: 0)
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            let sealer = try KeyItemSealer(key: SecretBytes.random(count: 32))
            try keychain.setSecurePassword("secret", service: "m", account: "sealed", sealer: sealer)
            try keychain.synchronizeBlocking()
            #expect(throws: KeychainError.protectionMismatch(service: "m", account: "sealed", isSealed: true)) {
                try keychain.importLegacy(file, overwrite: true)
            }
            #expect(keychain.accountsByService() == ["m": ["sealed"]])
            try keychain.close()
            let reopened = try Keychain(path: path)
            #expect(reopened.accountsByService() == ["m": ["sealed"]])
            // Without overwrite the secure item is skipped and the rest imported together.
            #expect(try reopened.importLegacy(file) == .init(imported: 2, skipped: 1))
            #expect(try reopened.password(service: "z", account: "last") == "3")
        }
    }

    @Test func malformedFilesChangeNothing() async throws {
        let malformed: [(Data, String)] = [
            (Data("not a plist".utf8), "not a property list"),
            (try PropertyListSerialization.data(fromPropertyList: ["a", "b"], format: .xml, options: 0),
             "the root is not a dictionary of services"),
            (try PropertyListSerialization.data(fromPropertyList: ["s": "flat"], format: .binary, options: 0),
             "service 's' is not a dictionary of accounts"),
            (try PropertyListSerialization.data(fromPropertyList: ["a": ["x": Data()], "s": ["n": 42]], format: .binary, options: 0),
             "the password of 's'/'n' is neither data nor a string"),
        ]
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            for (file, reason) in malformed {
                expectError(.invalidLegacyFile(reason)) { try keychain.importLegacy(file) }
            }
            #expect(keychain.items(matching: KeychainQuery()).isEmpty)
        }
    }

    /// Every input Fuzz/FuzzLegacyKeychain found, kept in Fuzz/Regressions/FuzzLegacyKeychain, is
    /// refused with `invalidLegacyFile` and stores nothing: a binary plist whose root is a set
    /// (it crashed Foundation's PropertyListSerialization), one whose root dictionary holds itself
    /// (a recursive decoding looped forever), and one holding a UTF-16 string of 57 characters that
    /// runs past the end of the file (Foundation's binary plist decoder trapped; found in a CI
    /// rehearsal, refused now by `BinaryPropertyListCheck` before Foundation sees it).
    @Test func fuzzRegressionsAreRefusedNotACrash() async throws {
        let directory = TestSupport.packageRoot.appendingPathComponent("Fuzz/Regressions/FuzzLegacyKeychain")
        let inputs = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
        #expect(inputs.count >= 3)
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            for input in inputs {
                let contents = try Data(contentsOf: input)
                #expect("\(input.lastPathComponent)") {
                    try keychain.importLegacy(contents)
                } throws: { error in
                    if case .invalidLegacyFile = error as? KeychainError { true } else { false }
                }
            }
            #expect(keychain.items(matching: KeychainQuery()).isEmpty)
        }
    }

    /// The binary plist check passes a well-formed file and fails every truncation of it; no
    /// change of its trailer makes the import crash.
    @Test func binaryPlistCheckBoundsEveryObject() throws {
        let valid = try PropertyListSerialization.data(
            fromPropertyList: ["com.example.app": ["alice": Data("secret".utf8), "bob": "password"]], format: .binary, options: 0)
        #expect(BinaryPropertyListCheck.isWellFormed(valid))
        #expect(try Keychain.legacyEntries(valid).count == 2)
        for length in 0..<valid.count { #expect(!BinaryPropertyListCheck.isWellFormed(valid.prefix(length))) }
        for index in valid.count - 32..<valid.count {
            for value: UInt8 in [0x00, 0x01, 0x7F, 0xFF] {
                var changed = valid
                changed[index] = value
                _ = try? Keychain.legacyEntries(changed)
            }
        }
    }
}

extension Data {
    /// Bytes from hex digits, whitespace ignored (for inputs kept in the tests).
    fileprivate init(hex: String) {
        let digits = Array(hex.filter(\.isHexDigit))
        self.init(stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! })
    }
}
