#if os(Linux)
import Glibc
import NIOCore
import Synchronization

/// Advertises one DNS-SD service instance on one network interface with multicast DNS (Linux,
/// SwiftNIO UDP multicast): probes for its names (RFC 6762 §8.1, renaming `Name (2)`, `Name (3)`…
/// on conflict), announces (§8.3), answers queries until stopped (§6, with known-answer
/// suppression, legacy unicast and the QU bit) and sends a goodbye (TTL 0) on `stop()` (§10.1).
///
/// Response timing (§6): a multicast answer holding a shared record (the PTR) is sent after a
/// random 20–120 ms (400–500 ms when the query's TC bit announces more known answers), and queries
/// arriving meanwhile are aggregated into that one response; an answer another responder
/// multicasts first, to the group and on the family the answer is due on, is dropped from it
/// (§7.4). Answers made only of unique records (SRV, TXT, A, AAAA), answers to probes, and unicast
/// (QU) and legacy unicast replies go at once.
///
/// Hardening: malformed packets are counted and dropped, and so, silently, are messages with a
/// non-zero opcode or response code (§18.3, §18.11) and responses not sent from port 5353 (§6);
/// the same record is multicast at most once per second per family (§6); multicast answers are
/// limited to a burst of 20 and 20 per second, and unicast replies (QU, legacy) draw on a budget of
/// their own (`ReplyBudget`: 20 and 20 per second overall, 5 and 5 per second per source
/// address), so that unicast queries, which the once-a-second limit does not hold back, cannot
/// spend the multicast answers; a QU query past the unicast budget is answered by multicast
/// instead (§5.4), under the once-a-second limit. Unicast replies go only to sources on the
/// interface's link (§11: an IPv4 subnet of it, an IPv6 link-local address, or an IPv6 on-link
/// prefix of it).
/// Records defended (§6.6): a response multicast to the group that holds one of our announced
/// records (same name, class and data) with less than half the TTL we give it, a goodbye (TTL 0)
/// included, would have every cache on the link drop or soon expire it; the advertiser multicasts
/// its correct record at once, on the family that response came on, under the once-a-second limit
/// and the multicast budget (`Statistics.defended` counts it).
/// Conflicts after announcing (§9): when another responder's answer claims our instance name
/// (SRV, TXT) or host name (A, AAAA) with different data, the advertiser goes back to probing,
/// renames if the conflict stands and announces again (`records` then shows the new names;
/// `Statistics.lateConflicts` counts it). It never gives up, and while it probes it answers no
/// query (§8: a host probes for its names before it answers for them), so a host that disputes
/// every name it tries keeps it probing, and silent, for as long as it does (RFC 6762 §8–§9 leave
/// no way around that). Only the first probing, in `start()`, ends after ten conflicts.
///
/// Families: by default both IPv4 (224.0.0.251) and IPv6 (ff02::fb, hop limit 255) on the
/// interface (one family is left out when the interface has no address of it); A and AAAA records
/// publish the interface's addresses; probes, announcements and goodbyes go to both groups, and a
/// multicast answer goes to the group of the family the query came on.
/// All of this is the `.builtIn` backend (the default on Linux); with `.system` the system's DNS-SD
/// daemon advertises instead (see ``DiscoveryBackend``).
public final class ServiceAdvertiser: Sendable {
    /// Counters describing what the responder saw; for tests and diagnostics.
    public struct Statistics: Sendable, Equatable {
        /// Datagrams received.
        public var received = 0
        /// Datagrams that were not well-formed DNS messages (dropped).
        public var malformed = 0
        /// Responses sent to queries.
        public var answered = 0
        /// Responses not sent because of the rate limits.
        public var rateLimited = 0
        /// Renames caused by name conflicts while probing (the first probing and every re-probing).
        public var conflicts = 0
        /// Conflicts found after announcing (RFC 6762 §9): another responder's answer claimed one of
        /// our unique names with different data, and the advertiser went back to probing.
        public var lateConflicts = 0
        /// Datagrams from off the link (RFC 6762 §11): legacy unicast replies not sent because the
        /// querier was not on the interface's link, and datagrams sent to our address discarded.
        public var offLink = 0
        /// Multicast responses sent after the random delay of RFC 6762 §6 (answers holding a
        /// shared record); each is also counted in `answered`.
        public var delayed = 0
        /// Queries whose answers were folded into a delayed response already waiting (§6).
        public var aggregated = 0
        /// Delayed answers dropped because another responder sent the same record meanwhile (§7.4).
        public var duplicatesSuppressed = 0
        /// Times the interface's addresses changed while announced, and the new ones were
        /// announced (RFC 6762 §8.4).
        public var renumbered = 0
        /// Corrections multicast because another host multicast one of our records with less than
        /// half its TTL, a goodbye (TTL 0) included (RFC 6762 §6.6); not counted in `answered`.
        public var defended = 0
        /// Responses sent to our address while we had asked for none (RFC 6762 §6: only probes ask
        /// for unicast answers), ignored: they reached no other host, so a claim among them would
        /// make us rename where no other host sees why.
        public var unsolicitedUnicast = 0
        /// Probing rounds deferred because another host probing for one of our names at the same
        /// time had the later data (RFC 6762 §8.2): probed again a second later, under the same name.
        public var tieBreaksLost = 0
    }

    /// Where the advertiser is in its life: answering happens only while `announced`.
    enum Phase { case idle, probing, announced, stopped }

    /// Everything the responder knows and decides with, kept behind the advertiser's lock. Its
    /// methods do no I/O: `receive` and `takePending` say what to send, and the advertiser sends it.
    struct State {
        /// Where the advertiser is: probing looks for conflicts only, announced also answers.
        var phase = Phase.idle
        /// The records as now claimed (the names of the current attempt while probing).
        var records: ServiceRecords
        /// Set while probing when another host disputes the instance name (RFC 6762 §8.2, §9).
        var instanceConflict = false
        /// Set while probing when another host disputes the host name.
        var hostConflict = false
        /// Set while probing when another host probing for the instance name at the same time won
        /// the tie-break (RFC 6762 §8.2): we wait a second and probe for it again, not renaming,
        /// as that host announces, if it is real, and its answer is then a conflict.
        var instanceTieLost = false
        /// The same for the host name.
        var hostTieLost = false
        /// The instance's rename counter: 1 is the name as given, N > 1 adds ` (N)`.
        var instanceAttempt = 1
        /// The host's rename counter: 1 is the label as given, N > 1 adds `-N`.
        var hostAttempt = 1
        /// When each record was last multicast, per family (RFC 6762 §6: at most once a second).
        var lastMulticast = [MulticastKey: ContinuousClock.Instant]()
        /// What may still be sent: multicast answers, and unicast replies apart.
        var budget = ReplyBudget()
        /// What the responder has seen so far.
        var statistics = Statistics()
        /// Addresses the interface had until the time given (kept `formerAddressLifetime`): our
        /// own answers naming them may still arrive, and are not a rival's (§9).
        var formerAddresses = [IPAddress: ContinuousClock.Instant]()
        /// The delayed multicast response being gathered (RFC 6762 §6), sent when its timer fires.
        var pending: PendingResponse?
        /// The records announced and still ours, withdrawn by the goodbye, also while probing
        /// again: those of a name another host disputed are left out (its own identical records,
        /// the PTR to a shared instance name, would be withdrawn from every cache with ours).
        var announced = [DNSResourceRecord]()

        /// What the responder does about `message`, received at `now` from `origin` while the
        /// interface has `interfaceAddresses`: nil for nothing, else a reply, a multicast answer, a
        /// delayed one or probing again. Updates the statistics, conflict flags, budget and
        /// pending response on the way.
        mutating func receive(
            _ message: DNSMessage, from origin: Origin, interfaceAddresses: [IPAddress], now: ContinuousClock.Instant
        ) -> ReplyAction? {
            // RFC 6762 §11: a datagram sent to one of our addresses from off the link (routed to
            // port 5353 from anywhere) is silently discarded: a response or a probe from there
            // would let a host beyond the link dispute our names, and a query there spend our
            // answer budget. One sent to the group came over the link, whatever its source's subnet.
            if !origin.toGroup, !origin.onLink {
                statistics.offLink += 1
                return nil
            }
            // No multicast DNS message (RFC 6762 §6, §18): whatever it claims disputes nothing.
            if message.mustBeIgnored(fromPort: origin.port) { return nil }
            // RFC 6762 §6: a unicast response is accepted only as the answer to a question that
            // asked for one, and ours do only while probing (QU probes).
            if message.isResponse, !origin.toGroup, phase != .probing {
                statistics.unsolicitedUnicast += 1
                return nil
            }
            switch phase {
            case .probing:
                let found = records.conflicts(with: message, alsoOurs: ourAddresses(interfaceAddresses, now: now))
                if message.isResponse {
                    if found.instance { instanceConflict = true }
                    if found.host { hostConflict = true }
                } else {
                    if found.instance { instanceTieLost = true }
                    if found.host { hostTieLost = true }
                }
                return nil
            case .announced:
                if message.isResponse { return receiveResponse(message, from: origin, interfaceAddresses: interfaceAddresses, now: now) }
                return answer(message, from: origin, now: now)
            case .idle, .stopped:
                return nil
            }
        }

        /// A response seen while announced: one disputing our names sends the responder back to
        /// probing (RFC 6762 §9); else one another host multicast drops the same answers still
        /// waiting to go on that family (§7.4), and one multicast with too short a TTL for one of
        /// our records (a goodbye included) is corrected at once (§6.6).
        private mutating func receiveResponse(
            _ message: DNSMessage, from origin: Origin, interfaceAddresses: [IPAddress], now: ContinuousClock.Instant
        ) -> ReplyAction? {
            let found = records.conflicts(with: message, alsoOurs: ourAddresses(interfaceAddresses, now: now))
            if found.instance || found.host {
                // Our unique records are disputed; back to probing. The disputed name's records
                // are no longer ours to withdraw.
                let (instance, host) = (records.instanceName, records.host)
                announced.removeAll { record in
                    (found.instance && (record.name == instance || record.data == .ptr(instance))) || (found.host && record.name == host)
                }
                phase = .probing
                pending = nil
                statistics.lateConflicts += 1
                return .reprobe
            }
            // Only a response sent to the group reached the caches ours would: one sent to our
            // address (a unicast reply, or a host that wants ours withheld) reached none, and
            // one on the other family reached none of this family's.
            guard origin.toGroup else { return nil }
            if !origin.fromUs { suppressDuplicates(seen: message, family: origin.family) }
            // Whatever its source says: a spoofer can claim ours, and none of our own multicasts
            // holds a record still announced with a short TTL (the goodbye goes once stopped, and
            // the renumbering one withdraws addresses no longer announced).
            return defendRecords(seen: message, family: origin.family, now: now)
        }

        /// RFC 6762 §6.6: `message`, multicast to the group on `family`, holds one of our announced
        /// records (same name, class and data) with less than half the TTL we give it (a goodbye,
        /// TTL 0, included, as a spoofer sends to remove us from every cache): every cache on
        /// that family would drop it (a goodbye one second later) or let it expire early, so the
        /// correct records are multicast at once on that family (no random delay: a cache keeps a
        /// goodbye only one second). Each record at most once a second per family and within the
        /// multicast budget, like every multicast answer: nil when those hold it back (counted as
        /// rate-limited), or when nothing of ours is in `message`.
        private mutating func defendRecords(seen message: DNSMessage, family: IPFamilies, now: ContinuousClock.Instant) -> ReplyAction? {
            var corrections = [DNSResourceRecord]()
            for record in message.answers + message.additionals {
                guard
                    let ours = announced.first(where: { $0.name == record.name && $0.recordClass == record.recordClass && $0.data == record.data }),
                    UInt64(record.effectiveTTL) * 2 < UInt64(ours.ttl), !corrections.contains(ours)
                else { continue }
                corrections.append(ours)
            }
            guard !corrections.isEmpty else { return nil }
            guard corrections.contains(where: { !multicastRecently($0, family: family, now: now) }) else {
                statistics.rateLimited += 1
                return nil
            }
            guard budget.takeMulticast(now: now) else {
                statistics.rateLimited += 1
                return nil
            }
            guard dropRecentlyMulticast(&corrections, family: family, now: now) else { return nil }
            guard let bytes = try? DNSMessage(flags: DNSMessage.responseFlags, answers: corrections).serialized() else { return nil }
            statistics.defended += 1
            return .multicast(bytes, families: family)
        }

        /// The answer to query `message` from `origin` (RFC 6762 §6): a unicast reply within the
        /// unicast budget; else, for a multicast question or a QU one (§5.4: a responder may
        /// answer it by multicast), a multicast answer; a legacy query past the budget gets none.
        /// A QU question sent to the group from beyond the interface's subnets (it came over the
        /// link) is answered by multicast (§11: a unicast reply might not reach it), and a legacy
        /// one from there not at all.
        private mutating func answer(_ message: DNSMessage, from origin: Origin, now: ContinuousClock.Instant) -> ReplyAction? {
            guard let response = records.response(to: message, sourcePort: origin.port) else { return nil }
            guard response.delivery != .legacyUnicast || origin.onLink else {
                statistics.offLink += 1
                return nil
            }
            if response.delivery != .multicast, origin.onLink {
                if budget.takeUnicast(from: origin.address, now: now) {
                    guard let bytes = try? response.message.serialized() else { return nil }
                    statistics.answered += 1
                    return .reply(bytes)
                }
                // A legacy querier does not listen to the group: a multicast answer would not reach it.
                guard response.delivery == .unicast else {
                    statistics.rateLimited += 1
                    return nil
                }
            }
            return answerByMulticast(response.message, to: message, family: origin.family, now: now)
        }

        /// The least time between two multicasts of one record on one family in answer to
        /// `query` (RFC 6762 §6): a second, or, for a probe (a query with proposed records in its
        /// authority section, §8.1), 250 ms, so that a host probing for one of our names hears our
        /// answer before its probes end (three 250 ms apart), whatever we multicast just before.
        static func multicastInterval(answering query: DNSMessage) -> Duration {
            query.authorities.isEmpty ? .seconds(1) : .milliseconds(250)
        }

        /// Multicasts `response` to `query`, which came on `family`: at once, or, when it holds a
        /// shared record, after the random delay of RFC 6762 §6, gathered with the queries that
        /// come meanwhile. Records multicast on `family` in the last second are not sent again,
        /// and an answer left with none is dropped without spending the multicast budget.
        private mutating func answerByMulticast(
            _ response: DNSMessage, to query: DNSMessage, family: IPFamilies, now: ContinuousClock.Instant
        ) -> ReplyAction? {
            let delay = ServiceRecords.responseDelay(to: query, answers: response.answers, delivery: .multicast)
            if delay != nil, pending != nil {
                // RFC 6762 §6: aggregate with the response already waiting.
                pending?.merge(response, family: family)
                statistics.aggregated += 1
                return nil
            }
            // Queries repeated faster than once a second must not use the budget up for everyone else.
            let interval = Self.multicastInterval(answering: query)
            guard response.answers.contains(where: { !multicastRecently($0, family: family, now: now, within: interval) }) else {
                statistics.rateLimited += 1
                return nil
            }
            guard budget.takeMulticast(now: now) else {
                statistics.rateLimited += 1
                return nil
            }
            if let delay {
                var waiting = PendingResponse()
                waiting.merge(response, family: family)
                pending = waiting
                return .sendPending(after: ServiceAdvertiser.randomDuration(in: delay))
            }
            var sent = response
            guard dropRecentlyMulticast(&sent.answers, family: family, now: now, within: interval) else { return nil }
            guard let bytes = try? sent.serialized() else { return nil }
            statistics.answered += 1
            return .multicast(bytes, families: family)
        }

        /// Takes the delayed multicast response gathered so far, at `now`: one message for each
        /// family it is due on, holding that family's answers not multicast there in the last
        /// second (nor by another responder meanwhile, §7.4). Empty when none is left, or when
        /// the responder is no longer announced; either way nothing is pending afterwards.
        mutating func takePending(now: ContinuousClock.Instant) -> [(bytes: [UInt8], family: IPFamilies)] {
            guard let waiting = pending else { return [] }
            pending = nil
            guard phase == .announced else { return [] }
            var messages = [(bytes: [UInt8], family: IPFamilies)]()
            for family in [IPFamilies.ipv4, .ipv6] {
                // No query came on it, or another responder multicast every answer first.
                guard var answers = waiting.answers[family], !answers.isEmpty else { continue }
                guard dropRecentlyMulticast(&answers, family: family, now: now) else { continue }
                let additionals = waiting.additionals.filter { !answers.contains($0) }
                let message = DNSMessage(flags: DNSMessage.responseFlags, answers: answers, additionals: additionals)
                guard let bytes = try? message.serialized() else { continue }
                messages.append((bytes, family))
            }
            if !messages.isEmpty {
                statistics.answered += 1
                statistics.delayed += 1
            }
            return messages
        }

        /// The addresses that count as ours in conflict detection at `now`: `interfaceAddresses`
        /// (the interface's as now read), and those it lost less than `formerAddressLifetime` ago.
        private mutating func ourAddresses(_ interfaceAddresses: [IPAddress], now: ContinuousClock.Instant) -> Set<IPAddress> {
            formerAddresses = formerAddresses.filter { now - $0.value < ServiceAdvertiser.formerAddressLifetime }
            return Set(interfaceAddresses).union(formerAddresses.keys)
        }

        /// RFC 6762 §6: a record is multicast at most once per second on each family (once per
        /// `interval`: 250 ms when answering a probe). Removes the others from `answers`, marks the
        /// rest as multicast now; false (and counted as rate-limited) when none is left.
        private mutating func dropRecentlyMulticast(
            _ answers: inout [DNSResourceRecord], family: IPFamilies, now: ContinuousClock.Instant, within interval: Duration = .seconds(1)
        ) -> Bool {
            answers.removeAll { multicastRecently($0, family: family, now: now, within: interval) }
            guard !answers.isEmpty else {
                statistics.rateLimited += 1
                return false
            }
            for record in answers { lastMulticast[MulticastKey(record: record, family: family)] = now }
            return true
        }

        /// Whether `record` was multicast on `family` less than `interval` (a second) before `now`.
        private func multicastRecently(
            _ record: DNSResourceRecord, family: IPFamilies, now: ContinuousClock.Instant, within interval: Duration = .seconds(1)
        ) -> Bool {
            guard let last = lastMulticast[MulticastKey(record: record, family: family)] else { return false }
            return now - last < interval
        }

        /// RFC 6762 §7.4: an answer waiting to be sent on `family` is dropped when another
        /// responder multicasts the same record there (name, type, class and data) with at least
        /// the TTL we would give. (A copy of another class, which no cache keeps for ours, would
        /// otherwise hide our answer from every browser.)
        private mutating func suppressDuplicates(seen message: DNSMessage, family: IPFamilies) {
            guard var waiting = pending, let due = waiting.answers[family] else { return }
            let kept = due.filter { ours in
                !message.answers.contains {
                    $0.name == ours.name && $0.recordClass == ours.recordClass && $0.data == ours.data && $0.effectiveTTL >= ours.ttl
                }
            }
            statistics.duplicatesSuppressed += due.count - kept.count
            waiting.answers[family] = kept
            pending = waiting
        }
    }

    /// A record multicast on one family, for the once-a-second limit.
    struct MulticastKey: Hashable {
        let record: DNSResourceRecord
        let family: IPFamilies
    }

    /// Answers gathered for one delayed multicast response, per family a query came on.
    struct PendingResponse {
        /// The answers due on each family, in the order they were asked for.
        var answers = [IPFamilies: [DNSResourceRecord]]()
        /// The additional records of every answer gathered (those also answers are left out when sent).
        var additionals = [DNSResourceRecord]()

        /// Adds the answers of `message`, due on `family`, and its additional records.
        mutating func merge(_ message: DNSMessage, family: IPFamilies) {
            var due = answers[family] ?? []
            for record in message.answers where !due.contains(record) { due.append(record) }
            answers[family] = due
            for record in message.additionals where !additionals.contains(record) { additionals.append(record) }
        }
    }

    /// What the socket tells about where a datagram came from.
    struct Origin {
        /// The family it came on (a multicast answer to it goes to that family's group).
        var family: IPFamilies
        /// Its source address, as text: the key of its unicast budget.
        var address: String
        /// Its source UDP port: 5353 for a multicast DNS querier or responder, any other for a
        /// legacy querier (RFC 6762 §6.7).
        var port: Int
        /// Whether it was sent to the mDNS group (so every host on the link heard it), rather than
        /// to one of our addresses.
        var toGroup: Bool
        /// Whether its source is on the interface's link (RFC 6762 §11).
        var onLink: Bool
        /// Whether its source is one of the interface's addresses: our own multicast looped back.
        var fromUs: Bool
    }

    /// What `State.receive` decided to send.
    enum ReplyAction {
        /// These bytes to the querier's address and port, at once.
        case reply([UInt8])
        /// These bytes to the group of `families`, at once.
        case multicast([UInt8], families: IPFamilies)
        /// The pending response (`State.takePending`), after this delay.
        case sendPending(after: Duration)
        /// Probing again, renaming if the claim stands, after a conflict once announced.
        case reprobe
    }

    private let interface: String
    private let families: IPFamilies
    private let baseInstance: ServiceInstanceName
    private let baseHost: String
    private let state: Mutex<State>
    private let socketBox = Mutex<MulticastDNSSocket?>(nil)
    private let receiveTask = Mutex<Task<Void, Never>?>(nil)
    private let addressTask = Mutex<Task<Void, Never>?>(nil)

    /// How often the interface's addresses are read again, to announce a renumbering.
    static let addressCheckInterval = Duration.seconds(2)
    /// How long an address the interface lost still counts as ours in conflict detection.
    static let formerAddressLifetime = Duration.seconds(10)

    private let system: SystemServiceRegistration?

    /// Prepares to advertise `instanceName` of `type` at `port` with the TXT attributes `txt` on
    /// interface `interface`, with host name `hostName.local.` (default: this machine's host name,
    /// reduced to letters, digits and hyphens), over the IP `families` asked for (default both).
    /// Nothing is sent until `start()`.
    ///
    /// With `backend` `.system` the system's DNS-SD daemon publishes the service on that interface
    /// under the daemon's own host name and on the families it is configured for (a `hostName` is
    /// then refused with `invalidHostName`, `families` is not used), and `statistics` stays zero;
    /// see ``DiscoveryBackend``.
    public init(
        interface: String, instanceName: String, type: ServiceType = .secureChannel, port: UInt16, txt: TXTRecord = TXTRecord(),
        hostName: String? = nil, families: IPFamilies = .all, backend: DiscoveryBackend = .platformDefault
    ) throws(ServiceDiscoveryError) {
        if backend == .system {
            guard hostName == nil else { throw .invalidHostName("the system backend publishes the daemon's own host name") }
            system = SystemServiceRegistration(library: try SystemDNSServiceLibrary.shared.get())
        } else {
            system = nil
        }
        let instance = try ServiceInstanceName(instanceName)
        let host = hostName ?? Self.defaultHostLabel()
        let records = try ServiceRecords(instance: instance, type: type, hostLabel: host, port: port, txt: txt, addresses: [])
        self.interface = interface
        self.families = families
        self.baseInstance = instance
        self.baseHost = host
        self.state = Mutex(State(records: records))
    }

    /// The records being advertised (after `start()`, with the final names and addresses).
    public var records: ServiceRecords { state.withLock { $0.records } }

    /// What the responder has seen so far.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Opens the socket, probes and announces. Returns the records as advertised (the instance or
    /// host name may carry a ` (N)` or `-N` suffix after a conflict). Throws `nameConflict` after
    /// ten conflicting attempts, or a socket/interface error; an advertiser is started at most once
    /// (a second call, even after a failure, throws `invalidState`).
    @discardableResult
    public func start() async throws(ServiceDiscoveryError) -> ServiceRecords {
        if let system {
            let current = records
            let records = try await system.start(
                instance: baseInstance, type: current.type, port: current.port, txt: current.txt,
                interfaceIndex: try DiscoveryBackend.interfaceIndex(interface))
            state.withLock {
                $0.records = records
                $0.phase = .announced
            }
            return records
        }
        try state.withLock { state throws(ServiceDiscoveryError) in
            guard state.phase == .idle else { throw .invalidState("the advertiser was already started") }
            state.phase = .probing
        }
        let socket: MulticastDNSSocket
        do {
            socket = try await MulticastDNSSocket.open(interface: interface, families: families)
        } catch {
            state.withLock { $0.phase = .stopped }
            throw error
        }
        socketBox.withLock { $0 = socket }
        let task = Task { [self] in
            for await datagram in socket.datagrams { await handle(datagram, socket: socket) }
        }
        receiveTask.withLock { $0 = task }
        addressTask.withLock { $0 = Task { [self] in await announceAddressChanges(socket: socket) } }
        do throws(ServiceDiscoveryError) {
            return try await probeAndAnnounce(socket: socket)
        } catch {
            await shutDown(sendGoodbye: false)
            throw error
        }
    }

    /// Probes for the current names (RFC 6762 §8.1), renaming after each conflict, then announces
    /// (§8.3) and returns the records as announced. Throws `nameConflict` after `attempts`
    /// conflicting attempts (nil: never), `invalidState` when the advertiser was stopped meanwhile.
    /// A round takes at least 1.25 s (a probe, 250 ms, then a second's wait after a conflict), so
    /// fewer than fifteen conflicts fit in ten seconds, the rate §8.1 caps.
    private func probeAndAnnounce(socket: MulticastDNSSocket, attempts: Int? = 10) async throws(ServiceDiscoveryError) -> ServiceRecords {
        for attempt in 1... {
            let (instanceAttempt, hostAttempt, current) = state.withLock { ($0.instanceAttempt, $0.hostAttempt, $0.records) }
            let instanceName = instanceAttempt == 1 ? baseInstance.value : Self.renamed(baseInstance.value, suffix: " (\(instanceAttempt))")
            let hostLabel = hostAttempt == 1 ? baseHost : Self.renamed(baseHost, suffix: "-\(hostAttempt)")
            socket.refreshAddresses()
            let records = try ServiceRecords(
                instance: try ServiceInstanceName(instanceName), type: current.type, hostLabel: hostLabel, port: current.port,
                txt: current.txt, addresses: socket.addresses)
            try state.withLock { state throws(ServiceDiscoveryError) in
                guard state.phase == .probing else { throw .invalidState("the advertiser was stopped") }
                state.records = records
                state.instanceConflict = false
                state.hostConflict = false
                state.instanceTieLost = false
                state.hostTieLost = false
            }
            var conflict = (instance: false, host: false), tieLost = false
            for _ in 0..<3 {
                try await socket.send(try encode(records.probe()))
                try? await Task.sleep(for: .milliseconds(250))
                (conflict, tieLost) = state.withLock { ((instance: $0.instanceConflict, host: $0.hostConflict), $0.instanceTieLost || $0.hostTieLost) }
                if conflict.instance || conflict.host || tieLost { break }
            }
            if !conflict.instance && !conflict.host && !tieLost { break }
            state.withLock { state in
                // A lost tie-break alone defers (§8.2: probe again a second later); an answer
                // that disputes a name renames it.
                if conflict.instance || conflict.host { state.statistics.conflicts += 1 } else { state.statistics.tieBreaksLost += 1 }
                if conflict.instance { state.instanceAttempt += 1 }
                if conflict.host { state.hostAttempt += 1 }
            }
            if let attempts, attempt >= attempts { throw .nameConflict(records.instanceName.description) }
            // RFC 6762 §8.1: after a conflict, wait before probing again.
            try? await Task.sleep(for: .seconds(1))
        }
        let records = try state.withLock { state throws(ServiceDiscoveryError) in
            guard state.phase == .probing else { throw .invalidState("the advertiser was stopped") }
            state.phase = .announced
            state.lastMulticast = [:]
            state.announced = state.records.allRecords
            return state.records
        }
        try await socket.send(try encode(records.announcement()))
        Task { [self] in
            try? await Task.sleep(for: .seconds(1))
            guard state.withLock({ $0.phase == .announced && $0.records == records }) else { return }
            try? await socket.send(try encode(records.announcement()))
        }
        return records
    }

    /// RFC 6762 §8.4: reads the interface's addresses every `addressCheckInterval`; when they
    /// changed while announced, the records are announced again, twice, a second apart, with the
    /// new addresses (their cache-flush bit replaces the old ones in the neighbours' caches) and
    /// the removed ones withdrawn (TTL 0) in the first. While probing, each attempt reads the
    /// addresses itself. Cancelled by `shutDown` before the goodbye.
    private func announceAddressChanges(socket: MulticastDNSSocket) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.addressCheckInterval)
            socket.refreshAddresses()
            let addresses = socket.addresses
            let changed: (records: ServiceRecords, removed: [IPAddress])? = state.withLock { state in
                guard state.phase == .announced, state.records.addresses != addresses else { return nil }
                let removed = state.records.addresses.filter { !addresses.contains($0) }
                for address in removed { state.formerAddresses[address] = .now }
                state.records = state.records.with(addresses: addresses)
                state.announced = state.records.allRecords
                // A delayed response gathered from the old records is not sent: the announcement
                // answers its queries with the new ones.
                state.pending = nil
                state.lastMulticast = [:]
                state.statistics.renumbered += 1
                return (state.records, removed)
            }
            guard let changed, !Task.isCancelled else { continue }
            try? await socket.send(try encode(changed.records.announcement(withdrawing: changed.removed)))
            try? await Task.sleep(for: .seconds(1))
            guard !Task.isCancelled, state.withLock({ $0.phase == .announced && $0.records == changed.records }) else { continue }
            try? await socket.send(try encode(changed.records.announcement()))
        }
    }

    /// RFC 6762 §9: after a conflict found once announced, probe again (renaming if the conflict
    /// stands) and re-announce. It never gives up: each round that meets a conflict renames and
    /// waits a second (§8.1), for as long as conflicts come, and nothing is answered meanwhile.
    /// A probe that cannot be sent (the link is down) is tried again five seconds later. It ends
    /// when the advertiser is stopped.
    private func reprobe(socket: MulticastDNSSocket) async {
        while true {
            try? await Task.sleep(for: Self.randomDuration(in: .zero ... .milliseconds(250)))  // §8.1 initial wait
            do {
                _ = try await probeAndAnnounce(socket: socket, attempts: nil)
                return
            } catch {
                // Stopped meanwhile: done. Else a probe could not be sent (the link is down):
                // try again a little later.
                guard state.withLock({ $0.phase == .probing }) else { return }
                try? await Task.sleep(for: .seconds(5))
            }
        }
    }

    /// Sends the goodbye announcement (TTL 0) and closes the socket. Safe to call more than once.
    public func stop() async {
        if let system {
            await system.stop()
            state.withLock { $0.phase = .stopped }
            return
        }
        await shutDown(sendGoodbye: true)
    }

    private func shutDown(sendGoodbye: Bool) async {
        // What was announced is withdrawn, also while probing again after a conflict.
        let announced = state.withLock { state in
            defer { state.phase = .stopped }
            return state.announced
        }
        guard let socket = socketBox.withLock({ box in defer { box = nil }; return box }) else { return }
        // The address watcher ends first, so that no announcement of it follows the goodbye.
        if let watcher = addressTask.withLock({ box in defer { box = nil }; return box }) {
            watcher.cancel()
            await watcher.value
        }
        let goodbye = DNSMessage(flags: DNSMessage.responseFlags, answers: announced.map { var record = $0; record.ttl = 0; return record })
        if sendGoodbye, !announced.isEmpty, let bytes = try? encode(goodbye) {
            try? await socket.send(bytes)
        }
        await socket.close()
        let task = receiveTask.withLock { box in defer { box = nil }; return box }
        await task?.value
    }

    private func encode(_ message: DNSMessage) throws(ServiceDiscoveryError) -> [UInt8] {
        do { return try message.serialized() } catch { throw .socket("cannot encode a message: \(error)") }
    }

    /// Reads one datagram (a malformed one is counted and dropped) and sends what
    /// `State.receive` decides about it.
    private func handle(_ datagram: Datagram, socket: MulticastDNSSocket) async {
        let message: DNSMessage
        do {
            message = try DNSMessage(parsing: datagram.bytes)
            state.withLock { $0.statistics.received += 1 }
        } catch {
            state.withLock {
                $0.statistics.received += 1
                $0.statistics.malformed += 1
            }
            return
        }
        let origin = Origin(
            family: datagram.family, address: datagram.source.ipAddress ?? "", port: datagram.source.port ?? 0, toGroup: datagram.toGroup,
            onLink: socket.isOnLink(datagram.source), fromUs: socket.isOwnAddress(datagram.source))
        let addresses = socket.addresses
        let action = state.withLock { $0.receive(message, from: origin, interfaceAddresses: addresses, now: .now) }
        switch action {
        case .reply(let bytes)?:
            try? await socket.send(bytes, to: datagram.source)
        case .multicast(let bytes, let families)?:
            try? await socket.send(bytes, families: families)
        case .sendPending(let delay)?:
            Task { [self] in
                try? await Task.sleep(for: delay)
                await sendPending(socket: socket)
            }
        case .reprobe?:
            Task { [self] in await reprobe(socket: socket) }
        case nil:
            break
        }
    }

    /// Sends the delayed multicast response gathered so far (`State.takePending`), on each family
    /// it is due on.
    private func sendPending(socket: MulticastDNSSocket) async {
        let messages = state.withLock { $0.takePending(now: .now) }
        for message in messages { try? await socket.send(message.bytes, families: message.family) }
    }

    /// A uniformly random duration in `range` (millisecond resolution).
    static func randomDuration(in range: ClosedRange<Duration>) -> Duration {
        let low = Int64(range.lowerBound / .milliseconds(1)), high = Int64(range.upperBound / .milliseconds(1))
        return .milliseconds(Int64.random(in: low...high))
    }

    /// `base` followed by `suffix` (` (2)` for an instance, `-2` for a host), `base` shortened by
    /// whole characters so that the result fits one label (63 bytes).
    static func renamed(_ base: String, suffix: String) -> String {
        var prefix = base
        while prefix.utf8.count + suffix.utf8.count > DNSName.maximumLabelLength { prefix.removeLast() }
        return prefix + suffix
    }

    /// This machine's host name reduced to a DNS label (letters, digits, hyphens), or `sf-host`.
    static func defaultHostLabel() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "sf-host" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let first = name.split(separator: ".").first.map(String.init) ?? ""
        let label = String(first.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") }.prefix(63))
        let trimmed = label.trimmingCharacters(in: "-")
        return trimmed.isEmpty ? "sf-host" : trimmed
    }
}

extension String {
    fileprivate func trimmingCharacters(in character: Character) -> String {
        String(self.drop { $0 == character }.reversed().drop { $0 == character }.reversed())
    }
}
#endif
