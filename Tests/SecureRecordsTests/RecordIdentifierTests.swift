import Foundation
import SFTestSupport
@testable import SecureRecords
import Testing

/// New record ids are UUID version 7 (RFC 9562): time-ordered, strictly increasing from one
/// generator, distinct across threads.
@Suite struct RecordIdentifierTests {
    /// The 16 bytes of `id`, in order.
    static func bytes(_ id: UUID) -> [UInt8] { withUnsafeBytes(of: id.uuid) { Array($0) } }

    /// The Unix milliseconds of a version 7 id.
    static func millisecond(_ id: UUID) -> UInt64 { bytes(id)[0..<6].reduce(0) { $0 << 8 | UInt64($1) } }

    static func isIncreasing(_ ids: [UUID]) -> Bool {
        zip(ids, ids.dropFirst()).allSatisfy { bytes($0).lexicographicallyPrecedes(bytes($1)) }
    }

    @Test func theLayoutIsRFC9562sVersion7() {
        // RFC 9562 Appendix A.6: 017F22E2-79B0-7CC3-98C4-DC0C0C07398F, unix_ts_ms 0x017F22E279B0,
        // rand_a 0xCC3, rand_b 0x18C4DC0C0C07398F. With its rand_a and the first 30 bits of its rand_b
        // as the counter, the id is the RFC's but for the last 32 bits (random here).
        let counter: UInt64 = 0xCC3 << 30 | 0x18C4_DC0C_0C07_398F >> 32
        let id = RecordIdentifiers().make(1, at: 0x017F_22E2_79B0, counterStart: counter)[0]
        let expected = UUID(uuidString: "017F22E2-79B0-7CC3-98C4-DC0C0C07398F")!
        #expect(Array(Self.bytes(id)[0..<12]) == Array(Self.bytes(expected)[0..<12]))
        #expect(Self.bytes(id)[6] >> 4 == 7 && Self.bytes(id)[8] >> 6 == 0b10)
    }

    @Test func idsAreStampedWithTheTimeAndIncreaseAcrossCallsAndBatches() {
        let before = RecordIdentifiers.now()
        var ids = RecordIdentifiers.make(5_000)
        ids += (0..<100).map { _ in RecordIdentifiers.make() }
        ids += RecordIdentifiers.make(3)
        let after = RecordIdentifiers.now()
        #expect(Set(ids).count == ids.count)
        #expect(Self.isIncreasing(ids))
        for id in ids {
            #expect(Self.bytes(id)[6] >> 4 == 7 && Self.bytes(id)[8] >> 6 == 0b10)
            #expect((before...after).contains(Self.millisecond(id)))
        }
    }

    @Test func aClockSteppingBackKeepsTheOrder() {
        let generator = RecordIdentifiers()
        let first = generator.make(10, at: 2_000_000)
        let back = generator.make(10, at: 1_000_000)  // the clock stepped back: the last millisecond stays
        let later = generator.make(10, at: 3_000_000)
        #expect(Self.isIncreasing(first + back + later))
        #expect(back.allSatisfy { Self.millisecond($0) == 2_000_000 })
        #expect(later.allSatisfy { Self.millisecond($0) == 3_000_000 })
    }

    @Test func aSpentCounterTakesTheNextMillisecond() {
        let generator = RecordIdentifiers()
        let last: UInt64 = 1 << RecordIdentifiers.counterBits - 1
        let ids = generator.make(3, at: 5_000, counterStart: last - 1)
        #expect(ids.map(Self.millisecond) == [5_000, 5_000, 5_001])
        #expect(Self.isIncreasing(ids))
    }

    @Test func threadsGetDistinctIdsEachIncreasing() async {
        let perThread = 20_000
        let batches = await withTaskGroup(of: [UUID].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<perThread / 100).flatMap { _ in RecordIdentifiers.make(100) } }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(batches.joined()).count == 4 * perThread)
        #expect(batches.allSatisfy(Self.isIncreasing))
    }

    @Test(arguments: Backend.enabled)
    func storesGiveNewRecordsTimeOrderedIds(backend: Backend) throws {
        let scratch = try RecordsScratch(backend)
        let store = try makeStore(scratch)
        let one = try store.add(BatchTests.gift(0), to: "gifts")
        let many = try store.add(contentsOf: (1..<600).map(BatchTests.gift), to: "gifts")
        let chosen = UUID()
        #expect(try store.add(BatchTests.gift(600), to: "gifts", id: chosen) == chosen)
        #expect(Self.isIncreasing([one] + many))
        #expect(([one] + many).allSatisfy { Self.bytes($0)[6] >> 4 == 7 })
        #expect(try store.record(chosen).id == chosen)
    }
}
