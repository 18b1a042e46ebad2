import Foundation
import SFTestSupport
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
}
