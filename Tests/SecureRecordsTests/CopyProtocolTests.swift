import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureRecordsPostgres
import SecureCore
import Testing

/// postgres-nio 1.33 traps (a precondition, the end of the process) when the server, while a
/// `COPY … FROM STDIN` sends its data, sends what ends the copy or the session from its side. A
/// server that lies, a pooler in trouble, or whoever took the port on loopback can: here a relay
/// in the server's stead, right after the server's CopyInResponse. The bulk load, held back from
/// those messages until its data has ended (`CopyResponseHold`), ends in a typed error or, run
/// again on a new connection, in success; the store holds every record once or none.
@Suite struct CopyProtocolTests {
    /// A message of the backend protocol: type, length (counting itself), body.
    static func message(_ type: Character, _ body: [UInt8] = []) -> Data {
        let length = UInt32(4 + body.count)
        return Data([type.asciiValue!, UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)])
            + Data(body)
    }

    static let lies: [(String, Data)] = [
        ("ReadyForQuery", message("Z", [UInt8(ascii: "I")])),
        ("ErrorResponse, ReadyForQuery",
         CommitCuttingRelay.errorResponse(severity: "ERROR", sqlState: "XX000", message: "lie") + message("Z", [UInt8(ascii: "I")])),
        ("CommandComplete, ReadyForQuery", message("C", Array("COPY 0".utf8) + [0]) + message("Z", [UInt8(ascii: "I")])),
        ("BackendKeyData", message("K", [0, 0, 0, 1, 0, 0, 0, 2])),
        ("AuthenticationOk", message("R", [0, 0, 0, 0])),
    ]

    @Test(.requires(.postgres), arguments: lies.indices)
    func aServerThatEndsACopyFromItsSideIsATypedError(lie: Int) throws {
        let (name, bytes) = Self.lies[lie]
        let relayed = try LostCommitTests.relayedStore()
        defer { relayed.relay.stop() }
        let store = relayed.store
        try store.createCollection("gifts", schema: giftSchema)
        try store.unlock(with: appSealer)
        relayed.relay.lieAfterCopyStarts(bytes)
        let records = (0..<300).map(BatchTests.gift)  // more than 256: the bulk load's COPY
        let stored: Int
        do {
            let ids = try store.add(contentsOf: records, to: "gifts")
            #expect(ids.count == records.count)
            stored = records.count
        } catch {
            guard case .storage = error else {
                Issue.record("\(name): expected a storage error, got \(error)")
                return
            }
            stored = 0
        }
        #expect(relayed.relay.copyLies == 1, "\(name): the lie was told")
        let direct = try RecordStore(storage: relayed.direct, configuration: testConfiguration)
        #expect(try direct.storage.allRecords(after: 0, limit: 1_000).records.count == stored, "\(name): all or nothing")
        // The store goes on serving.
        let after = try store.add(["toWhom": "after", "description": "d"], to: "gifts")
        #expect(try store.open(after).fields["toWhom"] == "after")
    }
}
