import Foundation
import FuzzSupport
import SecureCore
@_spi(Fuzzing) import SecureRecords

// What a store writer controls in a records store: the field maps of a SQLite record row, and the
// JSON lines `sf records import` reads. Input: selector (1 byte) || data.
//   selector even: a row's maps: u16be length of the clear map || u16be length of the sealed map ||
//     the clear map || the sealed map || the blind-index map (the rest). Decoded as the store reads
//     a row; a map it accepts must encode back to the same bytes (one encoding per map).
//   selector odd: JSON lines (UTF-8, split at newlines), checked line by line as `importLines`
//     checks them (writing nothing); a typed RecordsError or a record count.
// Seeds: a real export (store-keyed and password records, clear, sealed and indexed fields) and
// the row maps of its records.

func rowInput(clear: [UInt8], sealed: [UInt8], tokens: [UInt8]) -> Data {
    Data([0, UInt8(clear.count >> 8), UInt8(clear.count & 0xff), UInt8(sealed.count >> 8), UInt8(sealed.count & 0xff)]
        + clear + sealed + tokens)
}

Fuzz.main(seeds: {
    let directory = Fuzz.scratchDirectory("records-seeds")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = try RecordStore(
        path: directory + "/seeds.sfr", configuration: .init(passwordKDF: .scrypt(logN: 10, r: 8, p: 1)))
    try store.unlock(with: KeyItemSealer(key: SecretBytes([UInt8](repeating: 7, count: 32))))
    try store.createCollection(
        "gifts", schema: RecordSchema(["toWhom": .clear, "note": .clear, "description": .sealed, "ssn": .sealedIndexed]))
    try store.add(["toWhom": "Alice", "note": .bytes(Data([0, 1, 2])), "description": "a bicycle", "ssn": "123"], to: "gifts")
    try store.add(["toWhom": "Bob", "description": "a book"], to: "gifts", sealing: .password(SecretBytes(Array("pw".utf8))))
    try store.add(["toWhom": "Noël"], to: "gifts")
    var lines: [String] = []
    try store.export { lines.append($0) }
    let maps = FieldMapFuzzing.encodeRow(
        clear: ["toWhom": "Alice", "note": .bytes(Data([0, 1, 2]))], sealed: ["description": Data(repeating: 9, count: 40)],
        tokens: ["ssn": Data(repeating: 1, count: 16)])
    return [
        Data([1]) + Data(lines.joined(separator: "\n").utf8),
        rowInput(clear: maps.clear, sealed: maps.sealed, tokens: maps.tokens),
    ]
}) { input in
    guard let selector = input.first else { return }
    let bytes = [UInt8](input.dropFirst())
    if selector & 1 == 1 {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        _ = try? RecordStore.validateExport(lines)
        return
    }
    guard bytes.count >= 4 else { return }
    let clearCount = Int(bytes[0]) << 8 | Int(bytes[1]), sealedCount = Int(bytes[2]) << 8 | Int(bytes[3])
    let rest = bytes.dropFirst(4)
    let clear = Array(rest.prefix(clearCount)), sealed = Array(rest.dropFirst(clearCount).prefix(sealedCount))
    let tokens = Array(rest.dropFirst(clearCount + sealedCount))
    guard let row = FieldMapFuzzing.decodeRow(clear: clear, sealed: sealed, tokens: tokens) else { return }
    let encoded = FieldMapFuzzing.encodeRow(clear: row.clear, sealed: row.sealed, tokens: row.tokens)
    precondition(encoded.clear == clear, "a clear map decoded to values that encode differently")
    precondition(encoded.sealed == sealed && encoded.tokens == tokens, "a map decoded to entries that encode differently")
}
