/// A token bucket: it holds up to `capacity` tokens, earns one every `interval`, and each reply
/// spends one, so that replies come at most `capacity` at once and one per `interval` after.
struct ReplyBucket: Sendable {
    /// The most tokens held: the burst allowed.
    let capacity: Int
    /// The time it takes to earn one token.
    let interval: Duration
    /// The tokens held as of `refilled` (fractions of one accumulate).
    fileprivate(set) var tokens: Double
    /// When tokens were last earned: the last time the bucket was used.
    fileprivate(set) var refilled: ContinuousClock.Instant

    /// A full bucket at `now`.
    init(capacity: Int, interval: Duration, now: ContinuousClock.Instant) {
        self.capacity = capacity
        self.interval = interval
        self.tokens = Double(capacity)
        self.refilled = now
    }

    /// Adds the tokens earned from `refilled` to `now`, up to `capacity`. A `now` not later than
    /// `refilled` earns nothing (and takes nothing away).
    mutating func refill(now: ContinuousClock.Instant) {
        guard now > refilled else { return }
        tokens = min(Double(capacity), tokens + (now - refilled) / interval)
        refilled = now
    }

    /// Spends one token when one is held at `now` and returns true; otherwise spends nothing and
    /// returns false.
    mutating func take(now: ContinuousClock.Instant) -> Bool {
        refill(now: now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}

/// The reply budget of one responder (RFC 6762 §6 asks a responder to limit its rate).
///
/// Multicast answers and unicast replies (to QU questions and legacy queries) draw on separate
/// buckets. A multicast answer repeats a record at most once a second, so queries repeated faster
/// cost nothing; a unicast reply has no such limit, so unicast queries drawing on the multicast
/// budget could spend it all and leave every other querier unanswered. Unicast replies are limited
/// overall (`burst`, one per `interval`) and per source address (`perSourceBurst`, one per
/// `perSourceInterval`, for the `sourcesKept` sources used last), so that one host cannot spend
/// the whole unicast budget either.
struct ReplyBudget: Sendable {
    /// The burst of multicast answers, and of unicast replies overall.
    static let burst = 20
    /// The time to earn one more multicast answer, and one more unicast reply overall (20 a second).
    static let interval = Duration.milliseconds(50)
    /// The burst of unicast replies to one source address.
    static let perSourceBurst = 5
    /// The time to earn one more unicast reply to one source address (5 a second).
    static let perSourceInterval = Duration.milliseconds(200)
    /// How many source addresses have a bucket of their own; beyond it the one used longest ago is
    /// forgotten (it starts again full, while the overall bucket still bounds every source).
    static let sourcesKept = 64

    private var multicast: ReplyBucket
    private var unicast: ReplyBucket
    /// The unicast bucket of each source address kept, by the address's text.
    private(set) var sources = [String: ReplyBucket]()

    /// A full budget at `now`.
    init(now: ContinuousClock.Instant = .now) {
        multicast = ReplyBucket(capacity: Self.burst, interval: Self.interval, now: now)
        unicast = ReplyBucket(capacity: Self.burst, interval: Self.interval, now: now)
    }

    /// Spends one multicast answer at `now`; false (nothing spent) when none is left.
    mutating func takeMulticast(now: ContinuousClock.Instant) -> Bool {
        multicast.take(now: now)
    }

    /// Spends one unicast reply to `source` at `now`, from `source`'s bucket and the overall one;
    /// false, spending from neither, when either is empty.
    mutating func takeUnicast(from source: String, now: ContinuousClock.Instant) -> Bool {
        var own = sources.removeValue(forKey: source) ?? ReplyBucket(capacity: Self.perSourceBurst, interval: Self.perSourceInterval, now: now)
        own.refill(now: now)
        unicast.refill(now: now)
        let granted = own.tokens >= 1 && unicast.tokens >= 1
        if granted {
            own.tokens -= 1
            unicast.tokens -= 1
        }
        if sources.count >= Self.sourcesKept, let oldest = sources.min(by: { $0.value.refilled < $1.value.refilled })?.key {
            sources[oldest] = nil
        }
        sources[source] = own
        return granted
    }
}
