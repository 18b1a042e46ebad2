import Crypto
import Foundation
import SecureCore

/// The byte strings SecureRecords binds into its envelopes and derivations (docs/FORMATS.md,
/// "SecureRecords"). `lp(x)` is `u32be(len(x)) || x`, so no two different tuples encode alike.
enum RecordContext {
    static let sealedMagic = Data("SFR1".utf8)
    static let keyWrapMagic = Data("SFRK".utf8)
    static let blindIndexInfo = Data("SFR1 blind index".utf8)

    /// Appends `lp(bytes)`: `u32be(len(bytes)) || bytes`.
    static func lp(_ bytes: some Collection<UInt8>, into data: inout some RangeReplaceableCollection<UInt8>) {
        withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { data.append(contentsOf: $0) }
        data.append(contentsOf: bytes)
    }

    /// The UUID's 16 bytes in RFC 4122 order.
    static func bytes(of id: UUID) -> Data {
        withUnsafeBytes(of: id.uuid) { Data($0) }
    }

    /// `"SFR1" || lp(storeId) || lp(collection) || lp(recordId) || lp(field)`: the envelope context
    /// of one sealed value.
    static func sealedValue(storeId: Data, collection: String, record: UUID, field: String) -> [UInt8] {
        sealedValue(prefix: sealedValuePrefix(storeId: storeId, collection: collection), record: record, field: field)
    }

    /// `magic || lp(storeId) || lp(collection)`: the part of `sealedValue` shared by a collection
    /// (`magic` is `"SFR1"`, or `"SFR2"` for a password record's values that bind its clear fields).
    static func sealedValuePrefix(storeId: Data, collection: String, magic: Data = sealedMagic) -> Data {
        var data = magic
        lp(storeId, into: &data)
        lp(Data(collection.utf8), into: &data)
        return data
    }

    /// `prefix || lp(recordId) || lp(field)`, with `prefix` from `sealedValuePrefix`.
    static func sealedValue(prefix: Data, record: UUID, field: String) -> [UInt8] {
        // An array, not `Data`: appending to `Data` costs far more, and a bulk load builds one per value.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(prefix.count + 24 + field.utf8.count)
        prefix.withUnsafeBytes { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: record.uuid) { lp($0, into: &bytes) }
        lp(field.utf8, into: &bytes)
        return bytes
    }

    /// `"SFRK" || lp(storeId) || u32be(keyId)`: the context of a wrapped store key.
    static func keyWrap(storeId: Data, keyId: UInt32) -> Data {
        var data = keyWrapMagic
        lp(storeId, into: &data)
        withUnsafeBytes(of: keyId.bigEndian) { data.append(contentsOf: $0) }
        return data
    }

    /// `"SFR1 blind index" || lp(storeId) || lp(collection) || lp(field)`: HKDF info of a field's index key.
    static func blindIndexKeyInfo(storeId: Data, collection: String, field: String) -> Data {
        var data = blindIndexInfo
        lp(storeId, into: &data)
        lp(Data(collection.utf8), into: &data)
        lp(Data(field.utf8), into: &data)
        return data
    }
}

/// A blind index: HMAC-SHA256 under a per-field key derived from the store key, truncated.
public enum BlindIndex {
    /// Stored token length: 8 bytes (64 bits). With n distinct values in a field, a search for a
    /// value absent from the store matches by chance with probability about n / 2^64.
    public static let tokenByteCount = 8

    /// The per-field key: HKDF-SHA256(ikm: store key, salt: empty, info: see `RecordContext`, 32 bytes).
    static func fieldKey(storeKey: SecretBytes, storeId: Data, collection: String, field: String) throws(RecordsError) -> SecretBytes {
        do {
            return try KeyDerivation.hkdf(
                inputKeyMaterial: storeKey, salt: Data(),
                info: RecordContext.blindIndexKeyInfo(storeId: storeId, collection: collection, field: field), outputByteCount: 32)
        } catch {
            throw .crypto(error)
        }
    }

    /// The token of `value`: the first 8 bytes of HMAC-SHA256(fieldKey, kind || value bytes).
    static func token(of value: FieldValue, fieldKey: SymmetricKey) -> Data {
        token(of: value, keyed: HMAC(key: fieldKey))
    }

    /// `token(of:fieldKey:)` with the HMAC already keyed (a bulk load keys it once per field, not
    /// once per value).
    static func token(of value: FieldValue, keyed hmac: HMAC<SHA256>) -> Data {
        var hmac = hmac
        value.withEncoded { hmac.update(data: $0) }
        return hmac.finalize().withUnsafeBytes { Data(bytes: $0.baseAddress!, count: tokenByteCount) }
    }
}

/// Seals the fields of many records of one collection under one store key and authenticates the
/// records: the envelope sealer, the keyed blind-index and MAC HMACs and the context prefix are
/// prepared once (one per thread; not Sendable).
struct StoreKeySealer {
    /// The store key id the values are sealed and indexed under.
    let keyId: UInt32
    private var sealer: Envelope.BatchSealer
    /// Each indexed field's HMAC, keyed and not yet fed: each token starts from a copy.
    private let indexHMACs: [String: HMAC<SHA256>]
    private let macHMAC: HMAC<SHA256>
    private let storeId: Data
    private let contextPrefix: Data

    init(
        keyId: UInt32, storeKey: SecretBytes, indexKeys: [String: SymmetricKey], macKey: SymmetricKey, storeId: Data, contextPrefix: Data,
        expectedCount: Int
    ) throws(RecordsError) {
        self.keyId = keyId
        self.indexHMACs = indexKeys.mapValues { HMAC(key: $0) }
        self.macHMAC = HMAC(key: macKey)
        self.storeId = storeId
        self.contextPrefix = contextPrefix
        do {
            sealer = try Envelope.BatchSealer(key: storeKey, expectedCount: expectedCount)
        } catch {
            throw .crypto(error)
        }
    }

    /// The `SFE1` envelope of `value` for field `field` of record `record`.
    mutating func seal(_ value: FieldValue, record: UUID, field: String) throws(RecordsError) -> Data {
        let context = RecordContext.sealedValue(prefix: contextPrefix, record: record, field: field)
        do {
            return try value.withEncoded { (plaintext) throws(SecureCoreError) in
                try context.withContiguousBytes { (context) throws(SecureCoreError) in try sealer.seal(plaintext, context: context) }
            }
        } catch {
            throw .crypto(error)
        }
    }

    /// The blind-index token of `value` in `field`, or nil when the field is not indexed.
    func token(of value: FieldValue, field: String) -> Data? {
        indexHMACs[field].map { BlindIndex.token(of: value, keyed: $0) }
    }

    /// Puts `record` (store-keyed, its fields final) under this key: sets its key id and MAC.
    func authenticate(_ record: inout StoredRecord) {
        record.keyId = keyId
        record.mac = RecordAuthentication.mac(of: record, keyId: keyId, storeId: storeId, keyed: macHMAC)
    }
}

/// Sealing and opening one field value (an `SFE1` envelope of `kind || value`).
enum FieldSealing {

    static func seal(_ value: FieldValue, password: SecretBytes, kdf: PasswordKDF, context: [UInt8]) throws(RecordsError) -> Data {
        do {
            return try value.withEncoded { (plaintext) throws(SecureCoreError) in
                try password.withUnsafeBytes { bytes throws(SecureCoreError) in
                    try Envelope.seal(plaintext, passphrase: bytes, kdf: kdf, context: context)
                }
            }
        } catch {
            throw .crypto(error)
        }
    }

    /// Opens with a store key or a password; maps every failure to a typed error naming the field.
    static func open(
        _ sealed: Data, storeKey: SecretBytes?, password: SecretBytes?, limits: KDFLimits, context: [UInt8], record: UUID, field: String
    ) throws(RecordsError) -> FieldValue {
        guard password != nil || storeKey != nil else { throw .storeKeyRequired }
        var plaintext: Data
        do throws(SecureCoreError) {
            if let password {
                plaintext = try password.withUnsafeBytes { bytes throws(SecureCoreError) in
                    try Envelope.open(sealed, passphrase: bytes, context: context, limits: limits)
                }
            } else {
                plaintext = try Envelope.open(sealed, key: storeKey!, context: context)
            }
        } catch {
            switch error {
            case .authenticationFailed: throw .authenticationFailed(record: record, field: field)
            case .costAboveCeiling(let detail): throw .costAboveCeiling(detail)
            case .secretKindMismatch:
                // A password given for a store-key value or the reverse: the value is not this record's.
                throw .authenticationFailed(record: record, field: field)
            default: throw .malformedSealedValue(record: record, field: field, reason: error.description)
            }
        }
        defer { plaintext.resetBytes(in: 0..<plaintext.count) }
        guard let value = FieldValue(encoded: plaintext) else {
            throw .malformedSealedValue(record: record, field: field, reason: "unknown value kind")
        }
        return value
    }
}
