import Foundation
@_spi(Testing) import SecureCore
import SecureKeychain
@_spi(Testing) import SecureVault
import Testing

@Suite(.serialized) struct PurgeAndRotationTests {
    // The zeroization observer exists in debug builds only (SecretBytes+Testing.swift).
    #if DEBUG
    /// Collects the bytes of released SecretBytes buffers, through SecureCore's test-only observer.
    final class Released: @unchecked Sendable {
        private let lock = NSLock()
        private var buffers: [ObjectIdentifier: [UInt8]] = [:]
        func record(_ id: ObjectIdentifier, _ bytes: UnsafeRawBufferPointer) { lock.withLock { buffers[id] = Array(bytes) } }
        subscript(id: ObjectIdentifier) -> [UInt8]? { lock.withLock { buffers[id] } }
    }

    @Test func purgeZeroesTheKeyBuffers() throws {
        let scratch = try VaultScratch()
        let vault = try scratch.setUpVault()
        _ = try vault.rotateKey()
        let identifiers = vault.keyStorageIdentifiers
        #expect(identifiers.count == 3)  // vault key and two application keys
        let released = Released()
        let previous = SecretBytesZeroization.setObserver { released.record($0, $1) }
        defer { SecretBytesZeroization.setObserver(previous) }
        vault.purge()
        for id in identifiers {
            let bytes = try #require(released[id], "a key buffer was not released by purge()")
            #expect(bytes.count == 32 && bytes.allSatisfy { $0 == 0 })
        }
        #expect(vault.keyStorageIdentifiers.isEmpty)
    }
    #endif

    @Test func rotationKeepsOldDataReadableAndResealsSecureItems() throws {
        let scratch = try VaultScratch()
        let vault = try scratch.setUpVault()
        let keychain = vault.keychain
        let before = try vault.encrypt(Data("before".utf8), context: Data("ctx".utf8))
        try keychain.setSecurePassword("item secret", service: "mail", account: "me", sealer: vault)
        try keychain.setSecurePassword("other sealer", service: "other", account: "x", sealer: KeyItemSealer(key: .random(count: 32)))
        try keychain.setPassword("clear", service: "clear", account: "c")
        let sealedBefore = try keychain.item(.init(service: "mail", account: "me")).value
        #expect(sealedBefore.prefix(8) == Data("SFV1".utf8) + [0, 0, 0, 1])

        let rotation = try vault.rotateKey()
        #expect(rotation.keyId == 2 && rotation.resealed == 1 && rotation.skipped == 1)
        let after = try vault.encrypt(Data("after".utf8))
        #expect(after.prefix(8) == Data("SFV1".utf8) + [0, 0, 0, 2])
        let sealedAfter = try keychain.item(.init(service: "mail", account: "me")).value
        #expect(sealedAfter.prefix(8) == Data("SFV1".utf8) + [0, 0, 0, 2])
        #expect(try keychain.password(service: "clear", account: "c") == "clear")

        // A new process unlocking with the passcode reads both generations and the re-sealed item.
        let reopened = Vault(keychain: try scratch.keychain(), configuration: configuration())
        try reopened.unlock(passcode: secret("old passcode"))
        #expect(reopened.keyIds?.current == 2 && reopened.keyIds?.all == [1, 2])
        #expect(try reopened.decrypt(before, context: Data("ctx".utf8)) == Data("before".utf8))
        #expect(try reopened.decrypt(after) == Data("after".utf8))
        #expect(try reopened.keychain.securePassword(service: "mail", account: "me", sealer: reopened) == "item secret")
        // Rotation survives a passcode change and recovery.
        try reopened.recover(answers: testAnswers, newPasscode: secret("n"))
        #expect(try reopened.decrypt(before, context: Data("ctx".utf8)) == Data("before".utf8))
    }

    @Test func sealedFormatRejectsTamperingTruncationAndUnknownKeys() throws {
        let scratch = try VaultScratch()
        let vault = try scratch.setUpVault()
        let sealed = try vault.encrypt(Data("payload".utf8), context: Data("c".utf8))
        #expect(try vault.decrypt(sealed, context: Data("c".utf8)) == Data("payload".utf8))
        #expect(vaultError { _ = try vault.decrypt(sealed, context: Data("d".utf8)) } == .crypto(.authenticationFailed))
        for index in sealed.indices {
            var flipped = sealed
            flipped[index] ^= 0x01
            let error = vaultError { _ = try vault.decrypt(flipped, context: Data("c".utf8)) }
            #expect(error != nil, "flipping byte \(index) went unnoticed")
        }
        for length in 0..<sealed.count {
            #expect(vaultError { _ = try vault.decrypt(sealed.prefix(length), context: Data("c".utf8)) } != nil)
        }
        var otherKey = sealed
        otherKey[7] = 9
        #expect(vaultError { _ = try vault.decrypt(otherKey, context: Data("c".utf8)) } == .unknownKeyId(9))
        #expect(vaultError { _ = try vault.decrypt(Data("SFE1xxxxxxxx".utf8)) } == .crypto(.unrecognizedFormat(expected: "SFV1")))
        #expect(vaultError { _ = try vault.decrypt(Data("SFV".utf8)) } == .crypto(.truncated))
        // The header is bound: a key id rewritten to another held key fails authentication.
        _ = try vault.rotateKey()
        var relabelled = sealed
        relabelled[7] = 2
        #expect(vaultError { _ = try vault.decrypt(relabelled, context: Data("c".utf8)) } == .crypto(.authenticationFailed))
    }
}
