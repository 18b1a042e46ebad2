import Foundation
import SecureCore
import Synchronization

/// Makes new record ids: UUID version 7 (RFC 9562 §5.7), time-ordered so that a store's indexes
/// on the id grow at one end instead of taking each new record at a random place.
///
/// Random (version 4) ids made every insert touch a random leaf of each index on the id (four on
/// PostgreSQL: the record's and the three field tables' keys), splitting pages across the whole
/// index and logging each touched page whole after a checkpoint. Time-ordered ids keep a bulk load
/// and a stream of adds at the right edge of those indexes (Benchmarks/README.md, "record ids":
/// a bulk insert of 100,000 records on PostgreSQL 4.0 s before, 3.1 s after).
///
/// Layout (RFC 9562 §6.2, method 1): 48 bits of Unix time in milliseconds, the version, a 42-bit
/// counter (the 12 bits of `rand_a` and the first 30 of `rand_b`) and 32 random bits. The counter
/// starts at a random value below 2^41 at each new millisecond and counts up within it, so the ids
/// one generator makes are strictly increasing, also for a batch made in one millisecond or when
/// the clock steps back (the last millisecond is kept until the clock passes it). The 32 random
/// bits of every id, and the counter's random start, keep the ids of concurrent processes apart.
///
/// What an id reveals: the millisecond the record was created, and, next to another id of the same
/// store handle and millisecond, how many ids were made between them (SECURITY.md, "What a
/// record's id tells"). A store configured with `RecordIdKind.random` makes version 4 ids instead.
/// One generator per store handle.
final class RecordIdentifiers: Sendable {
    private struct Clock {
        var millisecond: UInt64 = 0
        var counter: UInt64 = 0
    }

    private let clock = Mutex(Clock())
    static let counterBits: UInt64 = 42

    /// `count` new ids, strictly increasing and greater than every id this generator made before,
    /// stamped `millisecond` (the Unix time in milliseconds; the clock's by default) or later.
    /// `counterStart` replaces the counter's random start (for tests).
    func make(_ count: Int, at millisecond: UInt64 = RecordIdentifiers.now(), counterStart: UInt64? = nil) -> [UUID] {
        precondition(millisecond < 1 << 48 && (counterStart ?? 0) < 1 << Self.counterBits, "outside the UUID version 7 fields")
        guard count > 0 else { return [] }
        let random = SecureRandom.bytes(count: 4 * count + 8)
        let start = counterStart ?? random.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 4 * count, as: UInt64.self) } >> (65 - Self.counterBits)
        let stamps: [(millisecond: UInt64, counter: UInt64)] = clock.withLock { clock in
            (0..<count).map { _ in
                if millisecond > clock.millisecond {
                    clock = Clock(millisecond: millisecond, counter: start)
                } else if clock.counter + 1 < 1 << Self.counterBits {
                    clock.counter += 1
                } else {
                    // The counter is spent (2^41 ids in one millisecond at least): the next
                    // millisecond is taken early (RFC 9562 §6.2).
                    clock = Clock(millisecond: clock.millisecond + 1, counter: start)
                }
                return (clock.millisecond, clock.counter)
            }
        }
        return random.withUnsafeBytes { random in
            stamps.enumerated().map { i, stamp in
                let tail = random.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)
                let high = stamp.millisecond << 16 | 0x7000 | stamp.counter >> 30  // unix_ts_ms, ver, rand_a
                let low = 0x8000_0000_0000_0000 | (stamp.counter & 0x3FFF_FFFF) << 32 | UInt64(tail)  // var, rand_b
                return withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { b in
                    UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
                }
            }
        }
    }

    /// The Unix time in milliseconds.
    static func now() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1000))
    }
}
