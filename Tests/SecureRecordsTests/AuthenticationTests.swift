import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureRecordsPostgres
import SecureCore
import Testing

/// Clear fields, tokens and sealed values authenticated as one record (docs/FORMATS.md, "Record
/// authentication"): whatever a store writer rewrites, adds, removes or moves is refused with
/// `recordModified` naming the record, whenever the store is unlocked, on both backends.
@Suite struct AuthenticationTests {
    /// Two clients unlocking a new store at once: one reads "no key yet", then the other makes the
    /// first key and writes a record under it before the first looks for keyed records. The first
    /// takes up the other's key instead of refusing the store as one whose keys were removed
    /// (found by `clientsInitialisingAtOnceEndWithOneStore`). A store that really has no key left
    /// is still refused (`keysWithoutACurrentKeyAreRefused`).
    @Test(arguments: Backend.enabled)
    func aFirstUnlockOvertakenByAnotherClientsTakesUpItsKey(_ backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let other = try makeStore(scratch)  // unlocked: it made key 1
        let id = try other.add(["ssn": "1", "description": "under key 1"], to: "gifts")
        let storage = FailingStorage(try scratch.storage(), failReplaceAfter: .max)
        let store = try RecordStore(storage: storage, configuration: testConfiguration)
        storage.staleMetadata.withLock { $0 = StoreMetadata(storeId: store.storeId, currentKeyId: nil, keys: []) }
        try store.unlock(with: appSealer)
        #expect(try store.open(id).fields["description"] == "under key 1")
        #expect(try storage.loadMetadata()?.keys.count == 1)
    }

    /// The class of rewrites of one store-keyed record's row, each applied to the stored record
    /// through the storage (as a store writer, who has no key, can) and each refused by `record`,
    /// `open` and a search that finds it. The untouched record still reads.
    @Test(arguments: Backend.enabled)
    func everyRewriteOfAStoreKeyedRecordIsRefused(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let alice = try store.add(["toWhom": "Alice", "note": "n", "description": "bike", "ssn": "111"], to: "gifts")
        let bob = try store.add(["toWhom": "Bob", "description": "kite", "ssn": "222"], to: "gifts")
        let original = try #require(try store.storage.record(alice))
        let other = try #require(try store.storage.record(bob))
        #expect(original.mac?.count == 32 && original.keyId == 1)
        let olderDescription = try #require(original.sealed["description"])
        try store.update(alice, setting: ["description": "a red bike"])
        let current = try #require(try store.storage.record(alice))

        var rewrites: [(String, StoredRecord, String)] = []
        func rewrite(_ what: String, reason: String = macMismatch, _ change: (inout StoredRecord) -> Void) {
            var row = current
            change(&row)
            rewrites.append((what, row, reason))
        }
        rewrite("clear value") { $0.clear["toWhom"] = "Mallory" }
        rewrite("clear value, same text as bytes") { $0.clear["toWhom"] = .bytes(Data("Alice".utf8)) }
        rewrite("clear field added") { $0.clear["photo"] = "x" }
        rewrite("clear field removed") { $0.clear["note"] = nil }
        rewrite("token from another record") { $0.blindIndexes["ssn"] = other.blindIndexes["ssn"] }
        rewrite("token removed") { $0.blindIndexes["ssn"] = nil }
        rewrite("sealed value removed") { $0.sealed["description"] = nil }
        rewrite("sealed value rolled back to its earlier version") { $0.sealed["description"] = olderDescription }
        rewrite("MAC of another record") { $0.mac = other.mac }
        rewrite("MAC truncated") { $0.mac = $0.mac?.prefix(16) }
        rewrite("MAC removed", reason: "its MAC was removed") { $0.mac = nil }
        rewrite("MAC and key id removed", reason: Self.unkeyed) {
            $0.mac = nil
            $0.keyId = nil
        }
        rewrite("MAC kept, key id removed", reason: "it carries a MAC but no key id") { $0.keyId = nil }
        rewrite("key id of a key the store lacks", reason: "it names store key 9, which the store does not hold") { $0.keyId = 9 }
        rewrite("MAC removed, key id of a key the store lacks", reason: "it names store key 9, which the store does not hold") {
            $0.mac = nil
            $0.keyId = 9
        }
        rewrite("made a password record, MAC kept", reason: "a password record carries a MAC") {
            $0.keying = .password
            $0.keyId = nil
            $0.mac = Data([1])
        }
        for (what, row, reason) in rewrites {
            try store.storage.replace([row])
            let refused = RecordsError.recordModified(alice, reason: reason)
            #expect(throws: refused, "\(what): record") { try store.record(alice) }
            #expect(throws: refused, "\(what): open") { try store.open(alice) }
            #expect(throws: refused, "\(what): search") { try store.search(in: "gifts") }
            #expect(throws: refused, "\(what): update") { try store.update(alice, setting: ["note": "m"]) }
            #expect(try store.storage.record(alice) == row, "\(what): a refused update changes nothing")
        }
        try store.storage.replace([current])
        #expect(try store.open(alice).fields["description"] == "a red bike")
        #expect(try store.search(in: "gifts", [.equals(field: "ssn", value: "111")]).map(\.id) == [alice])
    }

    static let unkeyed = RecordStore.withoutKeyInAnAuthenticatingStore

    /// A handle unlocked before another rotated the store meets records under a key it does not
    /// know: it unwraps the new key with the sealer it was unlocked with (not tampering, and no
    /// failure), finds the rotated records by blind index, and writes new records under the new key.
    @Test(arguments: Backend.enabled)
    func aHandleUnlockedBeforeARotationTakesUpTheNewKey(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let stale = try makeStore(scratch)
        let id = try stale.add(["toWhom": "Alice", "description": "bike", "ssn": "123"], to: "gifts")
        let other = try scratch.reopen()
        try other.rotateStoreKey(with: appSealer)
        #expect(try stale.search(in: "gifts").map(\.id) == [id])
        #expect(try stale.open(id).fields["description"] == "bike")
        let staleSearcher = try scratch.reopen()
        try staleSearcher.unlock(with: appSealer)
        try other.rotateStoreKey(with: appSealer)
        // The blind-index token under key 3 is one the searcher could not compute before.
        #expect(try staleSearcher.search(in: "gifts", [.equals(field: "ssn", value: "123")]).map(\.id) == [id])
        try other.rotateStoreKey(with: appSealer)
        let added = try stale.add(["toWhom": "Bob", "description": "kite"], to: "gifts")
        #expect(try stale.storage.record(added)?.keyId == 4)
        // A handle locked meanwhile is not unlocked by it.
        stale.lock()
        #expect(throws: RecordsError.storeKeyRequired) { try stale.open(added) }
        // Nor by a refresh that read the keys before the lock and installs after it.
        let racing = try scratch.reopen()
        try racing.unlock(with: appSealer)
        let before = try racing.currentKeyring()
        try other.rotateStoreKey(with: appSealer)
        let metadata = try #require(try racing.storage.loadMetadata())
        racing.lock()
        #expect(throws: RecordsError.storeKeyRequired) { try racing.refreshed(before, from: metadata) }
        #expect(!racing.isUnlocked)
    }

    /// A write never goes under a retired key: a key row this handle cannot open is passed over
    /// while the current key is still its own, but a newer current key it cannot open (a locked
    /// vault, a foreign wrap) fails the write, and nothing is written.
    @Test(arguments: Backend.enabled)
    func aWriteNeverGoesUnderARetiredKey(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let foreign = try KeyItemSealer(key: SecretBytes.random(count: 32))
        let wrapped = { (id: UInt32) throws in try store.wrap(SecretBytes.random(count: 32), id: id, sealer: foreign) }
        #expect(try store.storage.addKey(try wrapped(2), makeCurrent: false))
        let added = try store.add(["toWhom": "A", "description": "kept under key 1"], to: "gifts")
        #expect(try store.storage.record(added)?.keyId == 1)
        #expect(try store.storage.addKey(try wrapped(3), makeCurrent: true))
        #expect(throws: RecordsError.self) { try store.add(["toWhom": "B", "description": "not under key 1"], to: "gifts") }
        #expect(throws: RecordsError.self) { try store.update(added, setting: ["description": "not under key 1"]) }
        #expect(try store.search(in: "gifts").map(\.id) == [added])
        #expect(try store.open(added).fields["description"] == "kept under key 1")
    }

    /// A store whose key rows were changed so that it names no current key (so that the next unlock
    /// would make a new first key and take unauthenticated records as its own) is refused.
    @Test(.requires(.sqlite3))
    func keysWithoutACurrentKeyAreRefused() throws {
        let scratch = try RecordsScratch()
        let store = try makeStore(scratch)
        _ = try store.add(["toWhom": "Alice"], to: "gifts")
        let shell = try TestSupport.path(of: .sqlite3)
        let result = try TestSupport.run(shell, [scratch.path("store.db"), "DELETE FROM meta WHERE name = 'currentKeyId'"])
        #expect(result.status == 0, "\(result.stderrText)")
        let reopened = try scratch.reopen()
        #expect(throws: RecordsError.storeKeyUnavailable("the store holds keys but names no current key")) { try reopened.unlock(with: appSealer) }
        #expect(try reopened.wrappedKeys().keys.map(\.id) == [1])
        // Every key row removed too: the records under a key still tell, and no first key is made.
        let wiped = try TestSupport.run(shell, [scratch.path("store.db"), "DELETE FROM store_keys"])
        #expect(wiped.status == 0, "\(wiped.stderrText)")
        let again = try scratch.reopen()
        #expect(throws: RecordsError.storeKeyUnavailable("the store holds records under a key but no key: its keys were removed")) {
            try again.unlock(with: appSealer)
        }
        #expect(try again.wrappedKeys().keys.isEmpty)
    }

    /// A rotation never adopts a record whose key requires a MAC, even when the store again holds an
    /// unflagged key (an older wrap put back): the record is checked, and refused.
    @Test(.requiresVectors)
    func rotationDoesNotAdoptARecordWhoseKeyRequiresAMAC() throws {
        let scratch = try RecordsScratch()
        let path = try scratch.write("store.db", try #require(try TestSupport.vector("records/nfd-names.db")))
        let store = try RecordStore(storage: try SQLiteRecordStorage(path: path), configuration: testConfiguration)
        try store.unlock(with: appSealer)
        let olderWrap = try #require(try store.wrappedKeys().keys.first)
        try store.rotateStoreKey(with: appSealer)  // key 2 flagged, key 1 flagged after
        let id = try #require(try store.search().first).id
        try store.storage.rewrapKeys([olderWrap])  // the unflagged wrap of key 1 put back
        var row = try #require(try store.storage.record(id))
        row.mac = nil
        row.clear = row.clear.mapValues { _ in "Mallory" }
        try store.storage.replace([row])
        #expect(throws: RecordsError.recordModified(id, reason: "its MAC was removed")) { try store.rotateStoreKey(with: appSealer) }
        #expect(try store.storage.record(id) == row)
    }

    /// The server rewrites a clear field, swaps two tokens or deletes a sealed value with SQL
    /// (its administrator needs no key for that): refused with the store unlocked.
    @Test(.requires(.postgres))
    func serverRewritesWithSQL() throws {
        let scratch = try RecordsScratch(.postgres)
        let store = try makeStore(scratch)
        let alice = try store.add(["toWhom": "Alice", "description": "bike", "ssn": "111"], to: "gifts")
        let bob = try store.add(["toWhom": "Bob", "description": "kite", "ssn": "222"], to: "gifts")
        let admin = try #require(try scratch.storage() as? PostgresRecordStorage)
        defer { admin.close() }
        let clear = admin.tableName("clear_fields"), indexes = admin.tableName("blind_indexes"), sealed = admin.tableName("sealed_fields")
        let statements: [(String, UUID)] = [
            ("UPDATE \(clear) SET value = convert_to('Mallory', 'UTF8') WHERE record_id = '\(alice)'", alice),
            (
                "UPDATE \(indexes) AS i SET token = o.token FROM \(indexes) AS o WHERE i.record_id = '\(bob)' AND o.record_id = '\(alice)'",
                bob
            ),
            ("DELETE FROM \(sealed) WHERE record_id = '\(alice)'", alice),
        ]
        for (statement, victim) in statements {
            let before = try #require(try store.storage.record(victim))
            try admin.execute(statement)
            #expect(throws: RecordsError.recordModified(victim, reason: macMismatch), "\(statement)") { try store.open(victim) }
            #expect(throws: RecordsError.recordModified(victim, reason: macMismatch), "\(statement)") { try store.search(in: "gifts") }
            try store.storage.replace([before])
        }
        #expect(try store.search(in: "gifts", [.equals(field: "ssn", value: "111")]).map(\.id) == [alice])
        // The full-text column is the server's index, outside the MAC: a search it makes match is refused.
        try admin.execute("UPDATE \(admin.tableName("records")) SET fts = 'mallory:1'::tsvector WHERE id = '\(bob)'")
        #expect(throws: RecordsError.recordModified(bob, reason: "the store's search index disagrees with the record (full text)")) {
            try store.search(in: "gifts", [.fullText("mallory")])
        }
    }

    /// Tokens swapped between two records (the issue's case: a search for one ssn returned a record
    /// whose sealed ssn differs): both records are refused, and the search with them.
    @Test(arguments: Backend.enabled)
    func swappedTokensAreRefused(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let a = try store.add(["toWhom": "A", "ssn": "111-11-1111"], to: "gifts")
        let b = try store.add(["toWhom": "B", "ssn": "222-22-2222"], to: "gifts")
        var rowA = try #require(try store.storage.record(a))
        var rowB = try #require(try store.storage.record(b))
        swap(&rowA.blindIndexes, &rowB.blindIndexes)
        try store.storage.replace([rowA, rowB])
        #expect(throws: RecordsError.recordModified(b, reason: macMismatch)) {
            try store.search(in: "gifts", [.equals(field: "ssn", value: "111-11-1111")])
        }
        #expect(throws: RecordsError.recordModified(a, reason: macMismatch)) { try store.open(a) }
    }

    /// The schema row is not authenticated (SECURITY.md): a store writer may declare a sealed field
    /// clear, or an unindexed one indexed. That may change what a later `add` does, but no re-seal
    /// of a stored record (a key rotation, an update setting a sealed field, a password record's
    /// update or password change) may then write a sealed value in clear or publish its blind index:
    /// each is refused, and the record stays as stored.
    @Test(.requires(.sqlite3))
    func aChangedSchemaRowMakesNoReSealDiscloseAValue() throws {
        let shell = try TestSupport.path(of: .sqlite3)
        let scratch = try RecordsScratch()
        let store = try makeStore(scratch)
        let password = secret("pw")
        let keyed = try store.add(["toWhom": "Alice", "description": "bike", "blob": .bytes(Data([1]))], to: "gifts")
        let own = try store.add(["toWhom": "Bob", "description": "kite"], to: "gifts", sealing: .password(password))
        func sql(_ statement: String) throws -> String {
            let result = try TestSupport.run(shell, [scratch.path("store.db"), statement])
            #expect(result.status == 0, "sqlite3: \(result.stderrText)")
            return result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let stored = try [keyed, own].map { try #require(try store.storage.record($0)) }
        func expectLeftAsStored() throws {
            for (id, before) in zip([keyed, own], stored) {
                #expect(try store.storage.record(id)?.isIdentical(to: before) == true)
            }
        }
        for (from, to, field, reason) in [
            ("\"description\":\"sealed\"", "\"description\":\"clear\"", "description",
             "the record holds it sealed, but the stored schema declares it clear (the schema row was changed); the record was left as stored"),
            ("\"blob\":\"sealed\"", "\"blob\":\"sealed+blindIndex\"", "blob",
             "the record holds it sealed without a blind index, but the stored schema declares one (the schema row was changed); the record was left as stored"),
        ] {
            #expect(try sql("UPDATE collections SET schema = replace(schema, '\(from)', '\(to)') WHERE name = 'gifts'; SELECT changes();") == "1")
            let tampered = try scratch.reopen()
            try tampered.unlock(with: appSealer)
            let refused = RecordsError.fieldProtectionMismatch(collection: "gifts", field: field, reason: reason)
            #expect(throws: refused) { try tampered.rotateStoreKey(with: appSealer) }
            #expect(throws: refused) { try tampered.update(keyed, setting: ["blob": .bytes(Data([2]))]) }
            if field == "description" {  // a password record has no blind indexes: only the clear one applies
                #expect(throws: refused) { try tampered.update(own, setting: ["description": "ball"], password: password) }
                #expect(throws: refused) { try tampered.changePassword(of: own, from: password, to: secret("new")) }
            }
            try expectLeftAsStored()
            #expect(try sql("UPDATE collections SET schema = replace(schema, '\(to)', '\(from)') WHERE name = 'gifts'; SELECT changes();") == "1")
        }
        // With the schema as declared, each goes through.
        let honest = try scratch.reopen()
        try honest.unlock(with: appSealer)
        _ = try honest.rotateStoreKey(with: appSealer)
        try honest.changePassword(of: own, from: password, to: secret("new"))
        #expect(try honest.open(keyed).fields["description"] == "bike")
        #expect(try honest.open(own, password: secret("new")).fields["description"] == "kite")
    }

    /// A field name stored both clear and sealed (no writer of this library does that): a clear
    /// value planted beside a password record's sealed one was read in its place, without the
    /// password (`sf records get`), locked or not. Refused on every read, on both backends.
    @Test(arguments: Backend.enabled)
    func aClearValuePlantedBesideASealedOneIsRefused(_ backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let password = secret("pw")
        let own = try store.add(["toWhom": "Bob", "description": "kite"], to: "gifts", sealing: .password(password))
        var row = try #require(try store.storage.record(own))
        row.clear["description"] = "planted"
        try store.storage.replace([row])
        let refused = RecordsError.recordModified(own, reason: "field 'description' is stored both clear and sealed")
        let locked = try scratch.reopen()
        #expect(throws: refused) { try locked.record(own) }
        #expect(throws: refused) { try locked.search(in: "gifts", [.equals(field: "toWhom", value: "Bob")]) }
        #expect(throws: refused) { try store.open(own, password: password) }
        #expect(throws: refused) { try store.search(in: "gifts", [.fullText("planted")]) }
    }

    /// Password records have no blind indexes (FORMATS.md). One planted with another record's
    /// token (and its index row) answered an equality search on a sealed field, the store
    /// unlocked; it is refused as a record the index disagrees with.
    @Test(arguments: Backend.enabled)
    func aPasswordRecordWithABlindIndexIsNotASearchResult(_ backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let alice = try store.add(["toWhom": "Alice", "ssn": "111"], to: "gifts")
        let own = try store.add(["toWhom": "Bob", "description": "kite"], to: "gifts", sealing: .password(secret("pw")))
        let aliceRow = try #require(try store.storage.record(alice))
        var row = try #require(try store.storage.record(own))
        row.keyId = aliceRow.keyId
        row.blindIndexes = aliceRow.blindIndexes
        try store.storage.replace([row])
        #expect(throws: RecordsError.recordModified(own, reason: "the store's search index disagrees with the record (the blind index of 'ssn')")) {
            try store.search(in: "gifts", [.equals(field: "ssn", value: "111")])
        }
    }

    /// On SQLite the search tables are rows apart from the record's own: a value or token changed
    /// there alone (the record and its MAC intact) makes a search return a record that does not
    /// match, which is refused too.
    @Test(.requires(.sqlite3))
    func searchIndexRewrittenApartFromTheRecordIsRefused() throws {
        let shell = try TestSupport.path(of: .sqlite3)
        let scratch = try RecordsScratch()
        let store = try makeStore(scratch)
        let alice = try store.add(["toWhom": "Alice", "ssn": "111"], to: "gifts")
        let bob = try store.add(["toWhom": "Bob", "ssn": "222"], to: "gifts")
        func sql(_ statement: String) throws {
            let result = try TestSupport.run(shell, [scratch.path("store.db"), statement])
            #expect(result.status == 0, "sqlite3: \(result.stderrText)")
        }
        try sql("UPDATE clear_fields SET value = 'Mallory' WHERE value = 'Alice'")
        let indexDisagrees = "the store's search index disagrees with the record"
        #expect(throws: RecordsError.recordModified(alice, reason: "\(indexDisagrees) (field 'toWhom')")) {
            try store.search(in: "gifts", [.equals(field: "toWhom", value: "Mallory")])
        }
        #expect(throws: RecordsError.recordModified(alice, reason: "\(indexDisagrees) (field 'toWhom')")) {
            try store.search(in: "gifts", [.prefix(field: "toWhom", prefix: "Mal")])
        }
        let bobToken = try #require(try store.storage.record(bob)?.blindIndexes["ssn"])
        try sql("DELETE FROM blind_indexes WHERE name = 'ssn' AND token = x'\(bobToken.map { String(format: "%02x", $0) }.joined())'")
        try sql("UPDATE blind_indexes SET token = x'\(bobToken.map { String(format: "%02x", $0) }.joined())' WHERE name = 'ssn'")
        #expect(throws: RecordsError.recordModified(alice, reason: "\(indexDisagrees) (the blind index of 'ssn')")) {
            try store.search(in: "gifts", [.equals(field: "ssn", value: "222")])
        }
        let aliceBytes = RecordContext.bytes(of: alice).map { String(format: "%02x", $0) }.joined()
        try sql("INSERT INTO records_fts (rowid, body) SELECT seq, 'mallory' FROM records WHERE id = x'\(aliceBytes)'")
        #expect(throws: RecordsError.recordModified(alice, reason: "\(indexDisagrees) (full text)")) {
            try store.search(in: "gifts", [.fullText("mallory")])
        }
        // Locked, the index is still checked against the record, but the record cannot be: one
        // rewritten whole (row and index alike) is returned as stored (docs/SECURITY.md).
        let locked = try scratch.reopen()
        var row = try #require(try store.storage.record(bob))
        row.clear["toWhom"] = "Eve"
        try store.storage.replace([row])
        #expect(try locked.search(in: "gifts", [.equals(field: "toWhom", value: "Eve")]).map(\.id) == [bob])
        #expect(throws: RecordsError.recordModified(bob, reason: macMismatch)) {
            try store.search(in: "gifts", [.equals(field: "toWhom", value: "Eve")])
        }
    }

    /// A password record's sealed values bind its clear fields: a clear field rewritten makes every
    /// sealed value fail with the password; a record passed off as older (its marker removed) or as
    /// store-keyed (a MAC put in) fails too.
    @Test(arguments: Backend.enabled)
    func passwordRecordsBindTheirClearFields(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let id = try store.add(["toWhom": "Alice", "description": "bike"], to: "gifts", sealing: .password(secret("pw")))
        let row = try #require(try store.storage.record(id))
        #expect(row.keying == .password && row.mac?.count == RecordAuthentication.writeIdByteCount)
        var changed = row
        changed.clear["toWhom"] = "Mallory"
        try store.storage.replace([changed])
        #expect(throws: RecordsError.authenticationFailed(record: id, field: "description")) { try store.open(id, password: secret("pw")) }
        var older = row
        older.mac = nil
        try store.storage.replace([older])
        #expect(throws: RecordsError.authenticationFailed(record: id, field: "description")) { try store.open(id, password: secret("pw")) }
        var keyed = row
        keyed.mac = Data(repeating: 1, count: 32)
        try store.storage.replace([keyed])
        #expect(throws: RecordsError.recordModified(id, reason: "a password record carries a MAC")) { try store.record(id) }
        try store.storage.replace([row])
        #expect(try store.open(id, password: secret("pw")).fields == ["toWhom": "Alice", "description": "bike"])
        // Changing the clear field needs the password, and re-binds it.
        try store.update(id, setting: ["toWhom": "Carol"], password: secret("pw"))
        #expect(try store.open(id, password: secret("pw")).fields == ["toWhom": "Carol", "description": "bike"])
    }

    /// A password record's sealed values also bind the names of its sealed fields and the write
    /// that sealed them (`SFR3`): with the password, a sealed value removed or taken from an
    /// earlier write, the write id replaced (by an earlier one, or by the older markers), or every
    /// sealed value removed, is refused. Removing a sealed field needs the password (the record is
    /// sealed anew). The whole record put back to an earlier version of itself still opens: that
    /// is the roll-back docs/SECURITY.md leaves open.
    @Test(arguments: Backend.enabled)
    func passwordRecordsBindTheirSealedFieldsAndWrite(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let pw = secret("pw")
        let id = try store.add(["toWhom": "Alice", "description": "bike", "blob": "b1"], to: "gifts", sealing: .password(pw))
        let first = try #require(try store.storage.record(id))
        try store.update(id, setting: ["description": "a red bike"], password: pw)
        let second = try #require(try store.storage.record(id))
        #expect(second.mac?.count == RecordAuthentication.writeIdByteCount && second.mac != first.mac)
        #expect(try store.open(id, password: pw).fields == ["toWhom": "Alice", "description": "a red bike", "blob": "b1"])

        var rewrites: [(String, StoredRecord, RecordsError)] = []
        func rewrite(_ what: String, _ error: RecordsError, _ change: (inout StoredRecord) -> Void) {
            var row = second
            change(&row)
            rewrites.append((what, row, error))
        }
        let failsAt = { (field: String) in RecordsError.authenticationFailed(record: id, field: field) }
        rewrite("sealed value removed", failsAt("description")) { $0.sealed["blob"] = nil }
        rewrite("sealed value from the earlier write", failsAt("blob")) { $0.sealed["blob"] = first.sealed["blob"] }
        rewrite("other sealed value from the earlier write", failsAt("description")) { $0.sealed["description"] = first.sealed["description"] }
        rewrite("write id of the earlier write", failsAt("blob")) { $0.mac = first.mac }
        rewrite("write id made the SFR2 marker", failsAt("blob")) { $0.mac = Data() }
        rewrite("write id removed (SFR1)", failsAt("blob")) { $0.mac = nil }
        rewrite("every sealed value removed", .recordModified(id, reason: "a password record without sealed values, which this store never writes")) {
            $0.sealed = [:]
        }
        for (what, row, error) in rewrites {
            try store.storage.replace([row])
            #expect(throws: error, "\(what)") { try store.open(id, password: pw) }
        }
        // Locked, the record is not checked when read, but its write id refuses it when opened.
        #expect(throws: RecordsError.recordModified(id, reason: "its sealed values were removed")) {
            try scratch.reopen().open(id, password: pw)
        }
        try store.storage.replace([first])
        #expect(try store.open(id, password: pw).fields["description"] == "bike")
        try store.storage.replace([second])

        #expect(throws: RecordsError.passwordRequired(id)) { try store.update(id, setting: [:], removing: ["blob"]) }
        try store.update(id, setting: [:], removing: ["blob"], password: pw)
        #expect(try store.open(id, password: pw).fields == ["toWhom": "Alice", "description": "a red bike"])
        #expect(try store.storage.record(id)?.mac != second.mac)
    }

    /// A password record written before write ids (`SFR2`: `mac` empty, its values binding the
    /// clear fields alone) opens, and an update given its password seals it anew as `SFR3`.
    @Test(arguments: Backend.enabled)
    func olderPasswordRecordsAreSealedAnewByAnUpdateWithTheirPassword(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let pw = secret("pw")
        let id = UUID()
        let clear: [String: FieldValue] = ["toWhom": "Alice"]
        let context = RecordAuthentication.passwordValueContext(storeId: store.storeId, collection: "gifts", record: id, field: "description", clear: clear)
        let sealed = try FieldSealing.seal("bike", password: pw, kdf: testConfiguration.passwordKDF, context: context)
        try store.storage.insert([
            StoredRecord(id: id, collection: "gifts", keying: .password, keyId: nil, clear: clear, sealed: ["description": sealed], blindIndexes: [:], mac: Data())
        ])
        #expect(try store.open(id, password: pw).fields == ["toWhom": "Alice", "description": "bike"])
        try store.update(id, setting: [:], password: pw)
        #expect(try store.storage.record(id)?.mac?.count == RecordAuthentication.writeIdByteCount)
        #expect(try store.open(id, password: pw).fields == ["toWhom": "Alice", "description": "bike"])
    }

    /// The `SFR3` context is exactly the bytes FORMATS.md lists, sealed names in UTF-8 byte order.
    @Test func passwordWriteContextIsTheDocumentedEncoding() throws {
        let storeId = Data(repeating: 0xAA, count: 16)
        let record = UUID(uuidString: "00010203-0405-0607-0809-0a0b0c0d0e0f")!
        let writeId = Data(repeating: 0x5A, count: 16)
        var expected: [UInt8] = Array("SFR3".utf8) + [0, 0, 0, 16] + Array(storeId) + [0, 0, 0, 1, 0x63]
        expected += [0, 0, 0, 16] + (0..<16).map { UInt8($0) } + [0, 0, 0, 1, 0x7A]
        expected += [0, 0, 0, 13] + [0, 0, 0, 2, 0x74, 0x6f, 0, 0, 0, 3, 1, 0x41, 0x6c]
        let names: [UInt8] = [0, 0, 0, 3, 0x61, 0xCC, 0x8A] + [0, 0, 0, 1, 0x7A] + [0, 0, 0, 2, 0xC3, 0xA9]
        expected += [0, 0, 0, UInt8(names.count)] + names
        expected += [0, 0, 0, 16] + Array(writeId)
        let context = RecordAuthentication.passwordWriteContext(
            storeId: storeId, collection: "c", record: record, field: "z", clear: ["to": "Al"], sealedNames: ["z", "é", "a\u{30A}"],
            writeId: writeId)
        #expect(context == expected)
    }

    /// Clear-only records added while the store had no key get their key id and MAC when the first
    /// key is made; after that, a clear-only record needs the key, and rewriting one is refused.
    @Test(arguments: Backend.enabled)
    func clearOnlyRecordsAreAuthenticatedOnceTheStoreHasAKey(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch, unlock: false)
        let early = try store.add(["toWhom": "Alice"], to: "gifts")
        #expect(try store.storage.record(early)?.mac == nil)
        try store.unlock(with: appSealer)
        let adopted = try #require(try store.storage.record(early))
        #expect(adopted.keyId == 1 && adopted.mac?.count == 32)
        let locked = try scratch.reopen()
        #expect(throws: RecordsError.storeKeyRequired) { try locked.add(["toWhom": "Bob"], to: "gifts") }
        #expect(throws: RecordsError.storeKeyRequired) { try locked.update(early, setting: ["toWhom": "Bob"]) }
        var changed = adopted
        changed.clear["toWhom"] = "Mallory"
        try store.storage.replace([changed])
        #expect(throws: RecordsError.recordModified(early, reason: macMismatch)) { try store.record(early) }
        // Passed off as a record written before the store had a key: refused too.
        changed.keyId = nil
        changed.mac = nil
        try store.storage.replace([changed])
        #expect(throws: RecordsError.recordModified(early, reason: Self.unkeyed)) { try store.record(early) }
    }

    /// Key rotation checks each record before re-sealing it, so it never launders a rewritten record
    /// into a freshly MACed one: it stops at it, and the record stays refused.
    @Test(arguments: Backend.enabled)
    func rotationDoesNotLaunderARewrittenRecord(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let id = try store.add(["toWhom": "Alice", "description": "bike"], to: "gifts")
        var row = try #require(try store.storage.record(id))
        row.clear["toWhom"] = "Mallory"
        try store.storage.replace([row])
        #expect(throws: RecordsError.recordModified(id, reason: macMismatch)) { try store.rotateStoreKey(with: appSealer) }
        #expect(try store.storage.record(id) == row)
        #expect(throws: RecordsError.recordModified(id, reason: macMismatch)) { try store.record(id) }
    }

    /// A store written before records were authenticated (Tests/Vectors/records/nfd-names.db: a
    /// store-keyed record with a sealed, indexed field and no MAC, under a key without the
    /// authenticating flag) still opens; a record rewritten by this version gets a MAC; a key
    /// rotation puts every record under an authenticating key with a MAC, after which removing a
    /// MAC or rewriting a clear field is refused.
    @Test(.requiresVectors)
    func olderStoreIsAuthenticatedByRotation() throws {
        let scratch = try RecordsScratch()
        let path = try scratch.write("store.db", try #require(try TestSupport.vector("records/nfd-names.db")))
        let store = try RecordStore(storage: try SQLiteRecordStorage(path: path), configuration: testConfiguration)
        try store.unlock(with: appSealer)
        let legacy = try #require(try store.search().first)
        #expect(try store.storage.record(legacy.id)?.mac == nil)
        // Older versions also wrote records with clear fields alone under a key id: accepted, then adopted.
        let clearOnly = StoredRecord(
            id: UUID(), collection: legacy.collection, keying: .storeKey, keyId: 1, clear: legacy.clearFields, sealed: [:], blindIndexes: [:])
        try store.storage.insert([clearOnly])
        #expect(try store.record(clearOnly.id).clearFields == legacy.clearFields)
        #expect(try store.open(legacy.id).fields["ssn"] == "123-45-6789")
        // Unprotected until rotated: a rewritten clear field of a record under the older key passes.
        var row = try #require(try store.storage.record(legacy.id))
        let original = row
        row.clear = row.clear.mapValues { _ in "Mallory" }
        try store.storage.replace([row])
        #expect(try store.record(legacy.id).clearFields.values.allSatisfy { $0 == "Mallory" })
        try store.storage.replace([original])
        let rotation = try store.rotateStoreKey(with: appSealer)
        #expect(rotation.keyId == 2 && rotation.resealed == 2 && !rotation.resumed)
        #expect(try store.storage.record(clearOnly.id)?.mac?.count == 32)
        let rotated = try #require(try store.storage.record(legacy.id))
        #expect(rotated.keyId == 2 && rotated.mac?.count == 32)
        var stripped = rotated
        stripped.mac = nil
        try store.storage.replace([stripped])
        #expect(throws: RecordsError.recordModified(legacy.id, reason: "its MAC was removed")) { try store.record(legacy.id) }
        var rewritten = rotated
        rewritten.clear = rewritten.clear.mapValues { _ in "Mallory" }
        try store.storage.replace([rewritten])
        #expect(throws: RecordsError.recordModified(legacy.id, reason: macMismatch)) { try store.record(legacy.id) }
        // Back under the older key, without MAC, as the store first held it: refused, since the
        // finished rotation re-wrapped key 1 as authenticating.
        #expect(try store.wrappedKeys().keys.map(\.id) == [1, 2])
        try store.storage.replace([original])
        #expect(throws: RecordsError.recordModified(legacy.id, reason: "its MAC was removed")) { try store.open(legacy.id) }
    }

    /// The clear-only records of an older store (Tests/Vectors/records/v2-store.db, no key id, no
    /// MAC) are adopted by a rotation, and are authenticated from then on.
    @Test(.requiresVectors)
    func olderClearOnlyRecordsAreAdoptedByRotation() throws {
        let scratch = try RecordsScratch()
        let path = try scratch.write("store.db", try #require(try TestSupport.vector("records/v2-store.db")))
        let store = try RecordStore(storage: try SQLiteRecordStorage(path: path), configuration: testConfiguration)
        try store.unlock(with: appSealer)
        #expect(try store.search(in: "notes").count == 5)
        let rotation = try store.rotateStoreKey(with: appSealer)
        #expect(rotation.resealed == 5)
        for record in try store.search(in: "notes") {
            let row = try #require(try store.storage.record(record.id))
            #expect(row.keyId == 2 && row.mac?.count == 32)
        }
        let first = try #require(try store.search(in: "notes").first)
        var row = try #require(try store.storage.record(first.id))
        row.keyId = nil
        row.mac = nil
        try store.storage.replace([row])
        #expect(throws: RecordsError.recordModified(first.id, reason: Self.unkeyed)) { try store.search(in: "notes") }
    }

    /// The record MAC is computed over exactly the bytes FORMATS.md lists (a fixed record, key and
    /// store id give a fixed MAC), so an independent reader can check it.
    @Test func macInputIsTheDocumentedEncoding() throws {
        let record = StoredRecord(
            id: UUID(uuidString: "00010203-0405-0607-0809-0a0b0c0d0e0f")!, collection: "c", keying: .storeKey, keyId: 1,
            clear: ["to": "Al"], sealed: ["s": Data([9])], blindIndexes: ["s": Data([7, 7])])
        let storeId = Data(repeating: 0xAA, count: 16)
        var expected = Data("SFR2".utf8)
        expected += Data([0, 0, 0, 16]) + storeId
        expected += Data([0, 0, 0, 1]) + Data("c".utf8)
        expected += Data([0, 0, 0, 16]) + Data((0..<16).map { UInt8($0) })
        expected += Data([0, 0, 0, 1])
        expected += Data([0, 0, 0, 13]) + Data([0, 0, 0, 2, 0x74, 0x6f, 0, 0, 0, 3, 1, 0x41, 0x6c])
        expected += Data([0, 0, 0, 10]) + Data([0, 0, 0, 1, 0x73, 0, 0, 0, 1, 9])
        expected += Data([0, 0, 0, 11]) + Data([0, 0, 0, 1, 0x73, 0, 0, 0, 2, 7, 7])
        #expect(RecordAuthentication.macInput(of: record, keyId: 1, storeId: storeId) == Array(expected))

        // Empty maps and collection; names in UTF-8 byte order (an NFD `å`, `z`, `é`), which is not
        // the order of Swift strings (`z` < `å` < `é`), each name's bytes kept as given.
        let other = StoredRecord(
            id: record.id, collection: "", keying: .storeKey, keyId: 0, clear: ["z": "w", "é": "x", "a\u{30A}": "y"], sealed: [:], blindIndexes: [:])
        var clear: [UInt8] = [0, 0, 0, 3, 0x61, 0xCC, 0x8A, 0, 0, 0, 2, 1, 0x79]
        clear += [0, 0, 0, 1, 0x7A, 0, 0, 0, 2, 1, 0x77]
        clear += [0, 0, 0, 2, 0xC3, 0xA9, 0, 0, 0, 2, 1, 0x78]
        var otherExpected: [UInt8] = Array("SFR2".utf8) + [0, 0, 0, 16] + Array(storeId) + [0, 0, 0, 0]
        otherExpected += [0, 0, 0, 16] + (0..<16).map { UInt8($0) } + [0, 0, 0, 0]
        otherExpected += [0, 0, 0, UInt8(clear.count)] + clear + [0, 0, 0, 0] + [0, 0, 0, 0]
        #expect(RecordAuthentication.macInput(of: other, keyId: 0, storeId: storeId) == otherExpected)
    }
}
