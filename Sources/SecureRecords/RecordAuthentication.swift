import Crypto
import Foundation
import SecureCore

/// What binds a record's clear fields, tokens and sealed values together (docs/FORMATS.md,
/// "Record authentication"), so that whoever can write the storage cannot rewrite one unseen:
///
/// - a store-keyed record carries a MAC under a key derived from its store key, over its id,
///   collection, key id and its three field maps;
/// - a password record's sealed values are sealed with the clear-field map, the names of its
///   sealed fields and a random id of the write in their context (`SFR3`; `SFR2` records bind the
///   clear-field map alone), since no store key is involved in such a record.
enum RecordAuthentication {
    static let magic = Data("SFR2".utf8)
    static let passwordWriteMagic = Data("SFR3".utf8)
    /// A password record's write id (its stored `mac`): random bytes that every sealed value of
    /// one write binds, so that no value of another write (an earlier version) opens beside them.
    static let writeIdByteCount = 16
    static let macKeyInfo = Data("SFR2 record MAC".utf8)
    /// A record MAC is a whole HMAC-SHA256 (32 bytes).
    static let macByteCount = 32
    /// The byte after the 32 key bytes in the wrapped plaintext of a store key that authenticates
    /// its records (every key this version creates). Inside the wrap, so a store writer cannot
    /// remove it to pass records off as written before authentication existed.
    static let authenticatingKeyFlag: UInt8 = 0x01

    /// The MAC key of one store key: HKDF-SHA256(ikm: store key, salt: empty,
    /// info: "SFR2 record MAC" || lp(storeId), 32 bytes).
    static func macKey(storeKey: SecretBytes, storeId: Data) throws(RecordsError) -> SymmetricKey {
        var info = macKeyInfo
        RecordContext.lp(storeId, into: &info)
        do {
            return try KeyDerivation.hkdf(inputKeyMaterial: storeKey, salt: Data(), info: info, outputByteCount: 32).symmetricKey
        } catch {
            throw .crypto(error)
        }
    }

    /// `"SFR2" || lp(storeId) || lp(collection) || lp(recordId) || u32be(keyId) || lp(clear map) ||
    /// lp(sealed map) || lp(tokens map)`: what a store-keyed record's MAC covers.
    static func macInput(of record: StoredRecord, keyId: UInt32, storeId: Data) -> [UInt8] {
        // One buffer, each part appended as it is encoded (a bulk load computes 100,000 of these).
        var out: [UInt8] = []
        out.reserveCapacity(512)
        out.append(contentsOf: magic)
        RecordContext.lp(storeId, into: &out)
        RecordContext.lp(record.collection.utf8, into: &out)
        withUnsafeBytes(of: record.id.uuid) { RecordContext.lp($0, into: &out) }
        withUnsafeBytes(of: keyId.bigEndian) { out.append(contentsOf: $0) }
        FieldMap.append(clear: record.clear, to: &out, lengthPrefixed: true)
        FieldMap.append(record.sealed, to: &out, lengthPrefixed: true)
        FieldMap.append(record.blindIndexes, to: &out, lengthPrefixed: true)
        return out
    }

    /// The MAC of a store-keyed record under store key `keyId`'s MAC key.
    static func mac(of record: StoredRecord, keyId: UInt32, storeId: Data, key: SymmetricKey) -> Data {
        mac(of: record, keyId: keyId, storeId: storeId, keyed: HMAC(key: key))
    }

    /// `mac(of:keyId:storeId:key:)` with the HMAC already keyed (a bulk load keys it once).
    static func mac(of record: StoredRecord, keyId: UInt32, storeId: Data, keyed hmac: HMAC<SHA256>) -> Data {
        var hmac = hmac
        hmac.update(data: macInput(of: record, keyId: keyId, storeId: storeId))
        return hmac.finalize().withUnsafeBytes { Data($0) }
    }

    /// Whether `mac` is the record's MAC (compared in constant time).
    static func isValid(_ mac: Data, of record: StoredRecord, keyId: UInt32, storeId: Data, key: SymmetricKey) -> Bool {
        mac.count == macByteCount
            && HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: macInput(of: record, keyId: keyId, storeId: storeId), using: key)
    }

    /// `"SFR2" || lp(storeId) || lp(collection) || lp(recordId) || lp(field) || lp(clear map)`: the
    /// context of a sealed value of a password record that binds its clear fields.
    static func passwordValueContext(storeId: Data, collection: String, record: UUID, field: String, clear: [String: FieldValue]) -> [UInt8] {
        let prefix = RecordContext.sealedValuePrefix(storeId: storeId, collection: collection, magic: magic)
        var data = RecordContext.sealedValue(prefix: prefix, record: record, field: field)
        RecordContext.lp(FieldMap.encode(clear: clear), into: &data)
        return data
    }

    /// `"SFR3" || lp(storeId) || lp(collection) || lp(recordId) || lp(field) || lp(clear map) ||
    /// lp(sealed names) || lp(writeId)`, where `sealed names` is `lp(name)` of each of the
    /// record's sealed fields in the order of their UTF-8 bytes: the context of a sealed value of a
    /// password record written by this version. A clear field rewritten, a sealed value removed
    /// or one taken from another write makes every value fail to open.
    static func passwordWriteContext(
        storeId: Data, collection: String, record: UUID, field: String, clear: [String: FieldValue], sealedNames: some Sequence<String>,
        writeId: Data
    ) -> [UInt8] {
        let prefix = RecordContext.sealedValuePrefix(storeId: storeId, collection: collection, magic: passwordWriteMagic)
        var data = RecordContext.sealedValue(prefix: prefix, record: record, field: field)
        RecordContext.lp(FieldMap.encode(clear: clear), into: &data)
        var names: [UInt8] = []
        for name in sealedNames.sorted(by: FieldMap.precedes) { RecordContext.lp(name.utf8, into: &names) }
        RecordContext.lp(names, into: &data)
        RecordContext.lp(writeId, into: &data)
        return data
    }
}
