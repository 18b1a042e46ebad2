import Foundation
import SecureCore
import SFTestSupport
import Testing
@testable import SecureKeychain

/// A sealer whose device is gone: it fails with an error of its own type.
private struct UnpluggedSealer: ItemSealer {
    struct Unplugged: Error, Equatable { let slot: Int }
    func seal(_ plaintext: Data, context: Data) throws(SecureCoreError) -> Data { throw .sealerFailed(SealerFailure(Unplugged(slot: 2))) }
    func open(_ sealed: Data, context: Data) throws(SecureCoreError) -> Data { throw .sealerFailed(SealerFailure(Unplugged(slot: 2))) }
}

/// A sealer standing in for a locked vault.
private struct LockedSealer: ItemSealer {
    func seal(_ plaintext: Data, context: Data) throws(SecureCoreError) -> Data { throw .locked }
    func open(_ sealed: Data, context: Data) throws(SecureCoreError) -> Data { throw .locked }
}

@Suite struct SecureItemTests {
    let sealer = try! KeyItemSealer(key: SecretBytes.random(count: 32))

    @Test func securePasswordRoundTripsAndIsSealedAtRest() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setSecurePassword("s3cret ✓", service: "bank", account: "ann", sealer: sealer)
            try keychain.close()
            let reopened = try Keychain(path: path)
            #expect(try reopened.securePassword(service: "bank", account: "ann", sealer: sealer) == "s3cret ✓")
            let item = try reopened.item(.init(service: "bank", account: "ann"))
            #expect(item.isSealed)
            #expect(item.value.range(of: Data("s3cret".utf8)) == nil)
            #expect(reopened.accounts(service: "bank") == ["ann"])  // names stay clear
        }
    }

    @Test func lockedSealerIsAnErrorNotNil() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            expectError(.locked) { try keychain.setSecurePassword("x", service: "s", account: "a", sealer: LockedSealer()) }
            #expect(keychain.accounts(service: "s").isEmpty)
            try keychain.setSecurePassword("x", service: "s", account: "a", sealer: sealer)
            expectError(.locked) { try keychain.securePassword(service: "s", account: "a", sealer: LockedSealer()) }
        }
    }

    @Test func aSealersOwnErrorReachesTheCallerAsItsValue() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            for attempt in [
                { try keychain.setSecurePassword("x", service: "s", account: "a", sealer: UnpluggedSealer()) },
                {
                    try keychain.setSecurePassword("x", service: "s", account: "a", sealer: sealer)
                    _ = try keychain.securePassword(service: "s", account: "a", sealer: UnpluggedSealer())
                },
            ] {
                do {
                    try attempt()
                    Issue.record("an unplugged sealer sealed or opened")
                } catch KeychainError.sealingFailed(.sealerFailed(let failure)) {
                    #expect(failure.underlying as? UnpluggedSealer.Unplugged == UnpluggedSealer.Unplugged(slot: 2))
                } catch {
                    Issue.record("unexpected \(error)")
                }
            }
        }
    }

    @Test func sealedValueMovedToAnotherItemFailsToOpen() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setSecurePassword("ann's", service: "bank", account: "ann", sealer: sealer)
            let sealed = try keychain.item(.init(service: "bank", account: "ann")).value
            let targets: [KeychainItem.Identity] = [
                .init(service: "bank", account: "bob"),  // other account
                .init(service: "bank2", account: "ann"),  // other service
                .init(accessGroup: "g", service: "bank", account: "ann"),  // other access group
                .init(service: "ban", account: "kann"),  // same concatenation, other split
            ]
            for target in targets {
                try keychain.upsert(sealed, for: target, attributes: nil, isSealed: true)
                expectError(.authenticationFailed(service: target.service, account: target.account)) {
                    try keychain.securePassword(service: target.service, account: target.account, accessGroup: target.accessGroup, sealer: sealer)
                }
            }
            #expect(try keychain.securePassword(service: "bank", account: "ann", sealer: sealer) == "ann's")
        }
    }

    // Live peer: the sqlite3 shell edits the file underneath the keychain.
    @Test(.requires(.sqlite3)) func sealedValueCopiedInTheFileFailsToOpen() async throws {
        let shell = try sqliteShell()
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setSecurePassword("ann's", service: "bank", account: "ann", sealer: sealer)
            try keychain.setSecurePassword("bob's", service: "bank", account: "bob", sealer: sealer)
            try keychain.close()
            try runSQL(shell, path, "UPDATE items SET value = (SELECT value FROM items WHERE account = 'ann') WHERE account = 'bob'")
            let reopened = try Keychain(path: path)
            expectError(.authenticationFailed(service: "bank", account: "bob")) {
                try reopened.securePassword(service: "bank", account: "bob", sealer: sealer)
            }
            #expect(try reopened.securePassword(service: "bank", account: "ann", sealer: sealer) == "ann's")
        }
    }

    // Live peer: the sqlite3 shell plants rows beside an item, as whoever can write the file could,
    // each holding the item's old sealed value and sorting after it: classes 257 (which a byte
    // would read as 1), 1.5, '1x' and X'31' (which SQLite keeps in an INTEGER column and reads as
    // 1), the account as the same name not in NFC (U+212B for U+00C5), and as a blob of its bytes.
    @Test(.requires(.sqlite3)) func rowsPlantedBesideAnItemDoNotStandInForIt() async throws {
        let shell = try sqliteShell()
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setSecurePassword("old", service: "bank", account: "\u{00C5}", sealer: sealer)
            try keychain.close()
            let columns = "access_group, service, account, label, comment, generic, created, modified, sealed, value"
            let real = "FROM items WHERE account = char(197) AND class = 1 AND typeof(class) = 'integer' AND typeof(account) = 'text'"
            try runSQL(shell, path, """
                INSERT INTO items SELECT 257, \(columns) \(real);
                INSERT INTO items SELECT 1.5, \(columns) \(real);
                INSERT INTO items SELECT '1x', \(columns) \(real);
                INSERT INTO items SELECT X'31', \(columns) \(real);
                INSERT INTO items SELECT class, access_group, service, char(8491), label, comment, generic, created, modified, sealed, value \(real);
                INSERT INTO items SELECT class, access_group, service, CAST(account AS BLOB), label, comment, generic, created, modified, sealed, value \(real);
                """)
            #expect(try runSQL(shell, path, "SELECT count(*) FROM items") == "7")
            let reopened = try Keychain(path: path)
            #expect(try reopened.securePassword(service: "bank", account: "\u{00C5}", sealer: sealer) == "old")
            try reopened.setSecurePassword("new", service: "bank", account: "\u{00C5}", sealer: sealer)
            try reopened.close()
            // Every later process reads the value written last, not a planted copy of the old one.
            #expect(try Keychain(path: path).securePassword(service: "bank", account: "\u{00C5}", sealer: sealer) == "new")
            // The rows read as the item (its name in another form, or as a blob) went with the
            // change: the old value is not left on disk. Rows of unknown classes stay untouched.
            #expect(try runSQL(shell, path, "SELECT count(*) FROM items") == "5")
            #expect(try runSQL(shell, path, "SELECT count(*) FROM items WHERE typeof(class) = 'integer' AND class = 1") == "1")
        }
    }

    /// An item stored only under another spelling of its names (NFD, or a blob: what another
    /// implementation or an older version wrote) is deleted for good: the delete went to the NFC
    /// row, found none, and the item came back when the file was next loaded.
    // Live peer: the sqlite3 shell writes the rows.
    @Test(.requires(.sqlite3)) func anItemStoredUnderAnotherSpellingStaysDeleted() async throws {
        let shell = try sqliteShell()
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setPassword("a", service: "mail", account: "caf\u{e9}")
            try keychain.setPassword("b", service: "mail", account: "b\u{e9}a")
            try keychain.setPassword("c", service: "mail", account: "cy")
            try keychain.setPassword("d", service: "mail", account: "n\u{0}\u{e9}")
            try keychain.close()
            // Each of the first two rows rewritten under its NFD name, "cy" as a blob, and a name
            // holding a NUL (where SQLite's GLOB stops) under its NFD form.
            try runSQL(shell, path, """
                UPDATE items SET account = 'cafe' || char(769) WHERE account = 'caf' || char(233);
                UPDATE items SET account = 'be' || char(769) || 'a' WHERE account = 'b' || char(233) || 'a';
                UPDATE items SET account = CAST(account AS BLOB) WHERE account = 'cy';
                UPDATE items SET account = CAST(x'6e0065cc81' AS TEXT) WHERE account = CAST(x'6e00c3a9' AS TEXT);
                """)
            #expect(try runSQL(shell, path, "SELECT count(*) FROM items WHERE account = CAST(x'6e0065cc81' AS TEXT)") == "1")
            // From another process that has the file open, and from this one.
            let other = try Keychain(path: path)
            #expect(try other.password(service: "mail", account: "caf\u{e9}") == "a")
            let reopened = try Keychain(path: path)
            try reopened.deletePassword(service: "mail", account: "cafe\u{301}")
            try reopened.setPassword("b2", service: "mail", account: "b\u{e9}a")
            try reopened.deletePassword(service: "mail", account: "cy")
            try reopened.deletePassword(service: "mail", account: "n\u{0}\u{e9}")
            try reopened.close()
            try other.synchronizeBlocking()
            #expect(throws: KeychainError.self) { try other.password(service: "mail", account: "caf\u{e9}") }
            try other.close()
            let again = try Keychain(path: path)
            #expect(throws: KeychainError.self) { try again.password(service: "mail", account: "caf\u{e9}") }
            #expect(throws: KeychainError.self) { try again.password(service: "mail", account: "cy") }
            #expect(throws: KeychainError.self) { try again.password(service: "mail", account: "n\u{0}\u{e9}") }
            #expect(try again.password(service: "mail", account: "be\u{301}a") == "b2")
            try again.close()
            #expect(try runSQL(shell, path, "SELECT count(*) FROM items") == "1")
        }
    }

    @Test func everyFlippedByteFailsToOpen() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            let identity = KeychainItem.Identity(service: "s", account: "a")
            try keychain.setSecurePassword("value", service: "s", account: "a", sealer: sealer)
            let sealed = try keychain.item(identity).value
            for index in sealed.indices {
                var damaged = sealed
                damaged[index] ^= 0x01
                try keychain.upsert(damaged, for: identity, attributes: nil, isSealed: true)
                expectError(.authenticationFailed(service: "s", account: "a")) {
                    try keychain.securePasswordData(service: "s", account: "a", sealer: sealer)
                }
            }
            for length in [0, 1, sealed.count / 2, sealed.count - 1] {
                try keychain.upsert(sealed.prefix(length), for: identity, attributes: nil, isSealed: true)
                expectError(.authenticationFailed(service: "s", account: "a")) {
                    try keychain.securePasswordData(service: "s", account: "a", sealer: sealer)
                }
            }
        }
    }

    @Test func wrongKeyFailsToOpen() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setSecurePassword("x", service: "s", account: "a", sealer: sealer)
            let other = try KeyItemSealer(key: SecretBytes.random(count: 32))
            expectError(.authenticationFailed(service: "s", account: "a")) { try keychain.securePassword(service: "s", account: "a", sealer: other) }
        }
    }

    @Test func clearAndSealedItemsAreNotReadThroughTheOtherAPI() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setSecurePassword("x", service: "s", account: "sealed", sealer: sealer)
            try keychain.setPassword("y", service: "s", account: "clear")
            expectError(.protectionMismatch(service: "s", account: "sealed", isSealed: true)) { try keychain.password(service: "s", account: "sealed") }
            expectError(.protectionMismatch(service: "s", account: "clear", isSealed: false)) {
                try keychain.securePassword(service: "s", account: "clear", sealer: sealer)
            }
        }
    }

    @Test func bindingIsLengthPrefixedAndExact() {
        let context = SealedValueBinding.context(for: .init(accessGroup: "g", service: "ab", account: "c"))
        var expected = Data("SFKC".utf8)
        expected.append(contentsOf: [1, 1, 0, 0, 0, 1])
        expected.append(contentsOf: Array("g".utf8) + [0, 0, 0, 2] + Array("ab".utf8) + [0, 0, 0, 1] + Array("c".utf8))
        #expect(context == expected)
        #expect(context != SealedValueBinding.context(for: .init(accessGroup: "g", service: "a", account: "bc")))
        #expect(SealedValueBinding.context(for: .init(.key, service: "a", account: "b"))
            != SealedValueBinding.context(for: .init(.genericPassword, service: "a", account: "b")))
    }
}

/// Issue 12 item 4: a sealed item is never downgraded to clear by the clear-value APIs.
@Suite struct DowngradeTests {
    let sealer = try! KeyItemSealer(key: SecretBytes.random(count: 32))

    @Test func clearWritesToASealedItemAreRefusedUnlessAskedFor() async throws {
        try await withKeychainDirectory { _, path in
            let keychain = try Keychain(path: path)
            try keychain.setSecurePassword("sealed value", service: "bank", account: "ann", sealer: sealer)
            let before = try keychain.item(.init(service: "bank", account: "ann"))
            let mismatch = KeychainError.protectionMismatch(service: "bank", account: "ann", isSealed: true)
            expectError(mismatch) { try keychain.setPassword("clear", service: "bank", account: "ann") }
            expectError(mismatch) { try keychain.setPassword(Data("clear".utf8), service: "bank", account: "ann") }
            expectError(mismatch) {
                try keychain.update(KeychainQuery(service: "bank", account: "ann"), value: Data("clear".utf8))
            }
            // A query matching a clear and a sealed item changes neither.
            try keychain.setPassword("bob's", service: "bank", account: "bob")
            expectError(mismatch) { try keychain.update(KeychainQuery(service: "bank"), value: Data("clear".utf8)) }
            #expect(try keychain.password(service: "bank", account: "bob") == "bob's")
            try keychain.close()
            let reopened = try Keychain(path: path)
            let after = try reopened.item(.init(service: "bank", account: "ann"))
            #expect(after.isSealed && after.value == before.value)
            #expect(try reopened.securePassword(service: "bank", account: "ann", sealer: sealer) == "sealed value")
            // Attributes alone may change; an explicit request may change the protection.
            try reopened.update(KeychainQuery(service: "bank", account: "ann"), attributes: .init(label: "L"))
            #expect(try reopened.item(.init(service: "bank", account: "ann")).isSealed)
            try reopened.setPassword("now clear", service: "bank", account: "ann", changingProtection: true)
            #expect(try reopened.password(service: "bank", account: "ann") == "now clear")
        }
    }
}
