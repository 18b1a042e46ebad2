import Testing

@testable import ServiceDiscovery

/// A browse or resolve timeout meant as "for ever" (`.seconds(Int64.max)`) made a deadline the
/// runtime cannot turn into nanoseconds, and the sleep until it trapped ("Not enough bits to
/// represent the passed value"). Every discovery deadline is made from the timeout bounded to a day.
@Suite("discovery timeouts")
struct TimeoutTests {
    @Test("a timeout beyond a day counts as a day, a negative one as none, and its deadline can be slept until")
    func timeoutsAreBounded() async {
        #expect(Duration.seconds(Int64.max).boundedForDiscovery == .seconds(86_400))
        #expect(Duration.seconds(86_401).boundedForDiscovery == .seconds(86_400))
        #expect(Duration.seconds(-5).boundedForDiscovery == .zero)
        #expect(Duration.milliseconds(1500).boundedForDiscovery == .milliseconds(1500))
        // The sleep converts its deadline when it is scheduled, before the cancellation is seen.
        let deadline = ContinuousClock.now + Duration.seconds(Int64.max).boundedForDiscovery
        let sleeper = Task { try? await Task.sleep(until: deadline) }
        sleeper.cancel()
        await sleeper.value
    }
}
