import Foundation
import SFTestSupport
import Testing
@testable import SecureKeychain

@Suite struct SemanticsTests {
    @Test func addingADuplicateFails() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            let identity = KeychainItem.Identity(service: "mail", account: "ann")
            try keychain.add(Data("one".utf8), for: identity)
            expectError(.duplicateItem(service: "mail", account: "ann")) { try keychain.add(Data("two".utf8), for: identity) }
            #expect(try keychain.password(service: "mail", account: "ann") == "one")
            // Same names in another class or access group are other items.
            try keychain.add(Data("k".utf8), for: .init(.key, service: "mail", account: "ann"))
            try keychain.add(Data("g".utf8), for: .init(accessGroup: "team", service: "mail", account: "ann"))
            #expect(try keychain.password(service: "mail", account: "ann", accessGroup: "team") == "g")
        }
    }

    @Test func readingAMissingItemFails() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            expectError(.itemNotFound(service: "mail", account: "ann")) { try keychain.password(service: "mail", account: "ann") }
            expectError(.itemNotFound(service: "mail", account: "ann")) { try keychain.item(.init(service: "mail", account: "ann")) }
            expectError(.itemNotFound(service: "mail", account: "ann")) { try keychain.deletePassword(service: "mail", account: "ann") }
            expectError(.itemNotFound(service: "mail", account: nil)) { try keychain.update(KeychainQuery(service: "mail"), value: Data()) }
            #expect(keychain.items(matching: KeychainQuery()).isEmpty)
        }
    }

    @Test func updateByQueryChangesValuesAttributesAndModificationDate() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.add(Data("a".utf8), for: .init(service: "s", account: "1"), attributes: .init(label: "first"))
            try keychain.add(Data("b".utf8), for: .init(service: "s", account: "2"))
            try keychain.add(Data("c".utf8), for: .init(service: "t", account: "1"))
            let before = try keychain.item(.init(service: "s", account: "1"))
            try await Task.sleep(for: .milliseconds(20))
            #expect(try keychain.update(KeychainQuery(service: "s"), value: Data("new".utf8)) == 2)
            #expect(try keychain.password(service: "s", account: "1") == "new")
            #expect(try keychain.password(service: "s", account: "2") == "new")
            #expect(try keychain.password(service: "t", account: "1") == "c")
            let after = try keychain.item(.init(service: "s", account: "1"))
            #expect(after.creationDate == before.creationDate)
            #expect(after.modificationDate > before.modificationDate)
            #expect(after.attributes.label == "first")  // value-only update keeps attributes
            try keychain.update(KeychainQuery(service: "s", account: "1"), attributes: .init(comment: "c"))
            #expect(try keychain.item(.init(service: "s", account: "1")).attributes == .init(comment: "c"))
            #expect(try keychain.password(service: "s", account: "1") == "new")
        }
    }

    @Test func deletingOneAccountNeverTouchesAnother() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            for account in ["ann", "bob", "cy"] { try keychain.setPassword("pw-\(account)", service: "mail", account: account) }
            try keychain.setPassword("other", service: "chat", account: "bob")
            try keychain.deletePassword(service: "mail", account: "bob")
            #expect(keychain.accounts(service: "mail") == ["ann", "cy"])
            #expect(try keychain.password(service: "chat", account: "bob") == "other")
            try keychain.close()
            let reopened = try Keychain(path: path)
            #expect(reopened.accounts(service: "mail") == ["ann", "cy"])
            #expect(try reopened.password(service: "mail", account: "ann") == "pw-ann")
            #expect(try reopened.password(service: "mail", account: "cy") == "pw-cy")
            #expect(try reopened.password(service: "chat", account: "bob") == "other")
        }
    }

    @Test func listsAccountsAndMatchesWithLimits() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            for account in ["c", "a", "b"] { try keychain.setPassword("x", service: "s1", account: account) }
            try keychain.setPassword("x", service: "s2", account: "z")
            try keychain.setPassword("x", service: "s1", account: "q", accessGroup: "other")
            #expect(keychain.accounts(service: "s1") == ["a", "b", "c"])
            #expect(keychain.accountsByService() == ["s1": ["a", "b", "c"], "s2": ["z"]])
            #expect(keychain.accountsByService(accessGroup: "other") == ["s1": ["q"]])
            #expect(keychain.items(matching: KeychainQuery(limit: 2)).map(\.identity.account) == ["a", "b"])
            #expect(keychain.items(matching: KeychainQuery(service: "s1")).count == 4)  // any access group
            #expect(keychain.items(matching: KeychainQuery(limit: 0)).isEmpty)
            #expect(keychain.items(matching: KeychainQuery(.key)).isEmpty)
            #expect(try keychain.delete(KeychainQuery(service: "s1", limit: 2)) == 2)
            #expect(keychain.items(matching: KeychainQuery(service: "s1")).map(\.identity.account) == ["c", "q"])
        }
    }

    @Test func attributesAndDatesSurviveReopening() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            let identity = KeychainItem.Identity(.key, accessGroup: "g", service: "keys", account: "tag")
            let attributes = KeychainItem.Attributes(label: "Label ✓", comment: "note", genericData: Data([0, 1, 2]))
            let start = Date()
            try keychain.add(Data([9, 9]), for: identity, attributes: attributes)
            let added = try keychain.item(identity)
            #expect(added.attributes == attributes)
            #expect(added.creationDate == added.modificationDate)
            #expect(abs(added.creationDate.timeIntervalSince(start)) < 60)
            try keychain.close()
            let reopened = try Keychain(path: path).item(identity)
            #expect(reopened.attributes == attributes)
            #expect(reopened.value == Data([9, 9]))
            #expect(!reopened.isSealed)
            #expect(abs(reopened.creationDate.timeIntervalSince(added.creationDate)) < 0.001)
        }
    }

    @Test func setPasswordReplacesAndKeepsCreationDate() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setPassword("one", service: "s", account: "a")
            let created = try keychain.item(.init(service: "s", account: "a")).creationDate
            try keychain.setPassword(Data("two".utf8), service: "s", account: "a")
            #expect(try keychain.password(service: "s", account: "a") == "two")
            #expect(try keychain.item(.init(service: "s", account: "a")).creationDate == created)
        }
    }

    @Test func unicodeNamesEmptyAndLargeValues() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            let large = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
            let names = [("Dienst 🔐 ü", "名前"), ("", ""), ("with\u{0}nul", "tab\tand\nnewline"), ("ελληνικά", "emoji 👩‍👩‍👧")]
            for (service, account) in names { try keychain.setPassword(Data(), service: service, account: account) }
            try keychain.setPassword(large, service: "big", account: "blob")
            try keychain.setPassword("päss wörd ✓", service: "Dienst 🔐 ü", account: "text")
            try keychain.close()
            let reopened = try Keychain(path: path)
            for (service, account) in names { #expect(try reopened.passwordData(service: service, account: account) == Data()) }
            #expect(try reopened.passwordData(service: "big", account: "blob") == large)
            #expect(try reopened.password(service: "Dienst 🔐 ü", account: "text") == "päss wörd ✓")
            #expect(reopened.accounts(service: "Dienst 🔐 ü") == ["text", "名前"])
        }
    }

    @Test func nonTextPasswordIsReportedWhenReadAsString() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setPassword(Data([0xFF, 0xFE]), service: "s", account: "a")
            expectError(.valueNotText(service: "s", account: "a")) { try keychain.password(service: "s", account: "a") }
        }
    }

    @Test func mutationsAfterCloseFail() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setPassword("x", service: "s", account: "a")
            try keychain.close()
            try keychain.close()
            expectError(.closed) { try keychain.setPassword("y", service: "s", account: "a") }
            expectError(.closed) { try keychain.synchronizeBlocking() }
            #expect(try keychain.password(service: "s", account: "a") == "x")
        }
    }
}
