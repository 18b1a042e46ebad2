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
        let generator = RecordIdentifiers()
        let before = RecordIdentifiers.now()
        var ids = generator.make(5_000)
        ids += (0..<100).flatMap { _ in generator.make(1) }
        ids += generator.make(3)
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

    /// The counter bits of an id (`rand_a` and the first 30 bits of `rand_b`).
    static func counter(_ id: UUID) -> UInt64 {
        let b = bytes(id)
        let randA = UInt64(b[6] & 0x0F) << 8 | UInt64(b[7])
        let top30 = (UInt64(b[8] & 0x3F) << 24) | UInt64(b[9]) << 16 | UInt64(b[10]) << 8 | UInt64(b[11])
        return randA << 30 | top30
    }

    @Test func theCounterStartsAtRandomBelow2To41AndEachIdEndsIn32RandomBits() {
        // Generators of two store handles in the same millisecond share no counter.
        let starts = (0..<64).map { _ in Self.counter(RecordIdentifiers().make(1, at: 1_000)[0]) }
        #expect(starts.allSatisfy { $0 < 1 << 41 })
        #expect(Set(starts).count == starts.count)
        #expect(starts.contains { $0 >= 1 << 40 })  // all 41 bits are used (fails with probability 2^-64)
        // Within one millisecond the counter counts up and the last 32 bits are random.
        let ids = RecordIdentifiers().make(64, at: 1_000)
        #expect(zip(ids, ids.dropFirst()).allSatisfy { Self.counter($1) == Self.counter($0) + 1 })
        #expect(Set(ids.map { Array(Self.bytes($0)[12..<16]) }).count == ids.count)
    }

    @Test func threadsGetDistinctIdsEachIncreasing() async {
        let perThread = 20_000
        let generator = RecordIdentifiers()
        let batches = await withTaskGroup(of: [UUID].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<perThread / 100).flatMap { _ in generator.make(100) } }
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

    @Test func aStoreConfiguredForRandomIdsMakesVersion4Ids() throws {
        let scratch = try RecordsScratch(.sqlite)
        _ = try makeStore(scratch)
        var configuration = testConfiguration
        configuration.recordIds = .random
        let store = try RecordStore(storage: try scratch.storage(), configuration: configuration)
        try store.unlock(with: appSealer)
        let ids = [try store.add(BatchTests.gift(0), to: "gifts")] + (try store.add(contentsOf: (1..<300).map(BatchTests.gift), to: "gifts"))
        #expect(ids.allSatisfy { Self.bytes($0)[6] >> 4 == 4 && Self.bytes($0)[8] >> 6 == 0b10 })
        #expect(!Self.isIncreasing(ids))  // 300 random ids in increasing order: probability 1/300!
        #expect(try store.open(ids[150]).fields == BatchTests.gift(150))
    }
}
