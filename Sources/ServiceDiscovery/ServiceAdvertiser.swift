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
/// multicasts first is dropped from it (§7.4). Answers made only of unique records (SRV, TXT,
/// A, AAAA), answers to probes, and unicast (QU) and legacy unicast replies go at once.
///
/// Hardening: malformed packets are counted and dropped; the same record is multicast at most
/// once per second (§6); replies are limited to a burst of 20 and 20 per second overall; unicast
/// replies go only to sources on the interface's link (§11: an IPv4 subnet of it, an IPv6
/// link-local address, or an IPv6 on-link prefix of it).
/// Conflicts after announcing (§9): when another responder's answer claims our instance name
/// (SRV, TXT) or host name (A, AAAA) with different data, the advertiser goes back to probing,
/// renames if the conflict stands and announces again (`records` then shows the new names;
/// `Statistics.lateConflicts` counts it). If no name can be claimed in ten attempts it stops.
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
        /// Datagrams from off the link (RFC 6762 §11): unicast replies not sent because the querier
        /// was not on the interface's link, and responses discarded.
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
    }

    private enum Phase { case idle, probing, announced, stopped }

    private struct State {
        var phase = Phase.idle
        var records: ServiceRecords
        var instanceConflict = false
        var hostConflict = false
        /// The rename counters: 1 is the name as given, N > 1 adds ` (N)` / `-N`.
        var instanceAttempt = 1
        var hostAttempt = 1
        /// When each record was last multicast, per family (RFC 6762 §6: at most once a second).
        var lastMulticast = [MulticastKey: ContinuousClock.Instant]()
        var tokens = 20.0
        var lastRefill = ContinuousClock.now
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
    }

    private struct MulticastKey: Hashable {
        let record: DNSResourceRecord
        let family: UInt8
    }

    /// Answers gathered for one delayed multicast response, and the families the queries came on.
    private struct PendingResponse {
        var answers = [DNSResourceRecord]()
        var additionals = [DNSResourceRecord]()
        var families = IPFamilies()

        mutating func merge(_ message: DNSMessage, family: IPFamilies) {
            families.formUnion(family)
            for record in message.answers where !answers.contains(record) { answers.append(record) }
            for record in message.additionals where !additionals.contains(record) { additionals.append(record) }
        }
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
            }
            var conflict = (instance: false, host: false)
            for _ in 0..<3 {
                try await socket.send(try encode(records.probe()))
                try? await Task.sleep(for: .milliseconds(250))
                conflict = state.withLock { ($0.instanceConflict, $0.hostConflict) }
                if conflict.instance || conflict.host { break }
            }
            if !conflict.instance && !conflict.host { break }
            state.withLock { state in
                state.statistics.conflicts += 1
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

    /// The addresses that count as ours in conflict detection: the interface's as now read, and
    /// those it lost less than `formerAddressLifetime` ago.
    private static func alsoOurs(_ state: inout State, socket: MulticastDNSSocket) -> Set<IPAddress> {
        let now = ContinuousClock.now
        state.formerAddresses = state.formerAddresses.filter { now - $0.value < formerAddressLifetime }
        return Set(socket.addresses).union(state.formerAddresses.keys)
    }

    /// RFC 6762 §9: after a conflict found once announced, probe again (renaming if the conflict
    /// stands) and re-announce. It never gives up (a host on the link that claims every name we
    /// try would otherwise silence us for good): past fifteen conflicts in ten seconds it probes
    /// once every five seconds (§8.1). It ends when the advertiser is stopped.
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
        let port = datagram.source.port ?? 0
        let onLink = socket.isOnLink(datagram.source)
        let fromUs = socket.isOwnAddress(datagram.source)
        // RFC 6762 §11: a datagram sent to one of our addresses from off the link (routed to port
        // 5353 from anywhere) is silently discarded: a response or a probe from there would let a
        // host beyond the link dispute our names, and a query there spend our answer budget. One
        // sent to the group came over the link, whatever its source's subnet.
        if !datagram.toGroup, !onLink {
            state.withLock { $0.statistics.offLink += 1 }
            return
        }
        let action: ReplyAction? = state.withLock { state in
            switch state.phase {
            case .probing:
                let found = state.records.conflicts(with: message, alsoOurs: Self.alsoOurs(&state, socket: socket))
                if found.instance { state.instanceConflict = true }
                if found.host { state.hostConflict = true }
                return nil
            case .announced:
                if message.isResponse {
                    let found = state.records.conflicts(with: message, alsoOurs: Self.alsoOurs(&state, socket: socket))
                    if found.instance || found.host {
                        // RFC 6762 §9: our unique records are disputed; back to probing. The
                        // disputed name's records are no longer ours to withdraw.
                        let (instance, host) = (state.records.instanceName, state.records.host)
                        state.announced.removeAll { record in
                            (found.instance && (record.name == instance || record.data == .ptr(instance))) || (found.host && record.name == host)
                        }
                        state.phase = .probing
                        state.pending = nil
                        state.statistics.lateConflicts += 1
                        return .reprobe
                    }
                    if !fromUs { Self.suppressDuplicates(in: &state, seen: message) }
                    return nil
                }
                guard let answer = state.records.response(to: message, sourcePort: port) else { return nil }
                guard answer.delivery == .multicast || onLink else {
                    state.statistics.offLink += 1
                    return nil
                }
                let delay = ServiceRecords.responseDelay(to: message, answers: answer.message.answers, delivery: answer.delivery)
                if delay != nil, state.pending != nil {
                    // RFC 6762 §6: aggregate with the response already waiting.
                    state.pending?.merge(answer.message, family: datagram.family)
                    state.statistics.aggregated += 1
                    return nil
                }
                let now = ContinuousClock.now
                var response = answer.message
                let delivery = answer.delivery
                // A multicast answer of records multicast in the last second is not sent, and so
                // costs no budget (queries repeated faster must not use it up for everyone else).
                if delivery == .multicast {
                    let fresh = response.answers.filter { !Self.multicastRecently($0, family: datagram.family, state: state, now: now) }
                    guard !fresh.isEmpty else {
                        state.statistics.rateLimited += 1
                        return nil
                    }
                }
                state.tokens = min(20, state.tokens + Double((now - state.lastRefill) / .milliseconds(50)))
                state.lastRefill = now
                guard state.tokens >= 1 else {
                    state.statistics.rateLimited += 1
                    return nil
                }
                state.tokens -= 1
                if let delay {
                    var pending = PendingResponse()
                    pending.merge(answer.message, family: datagram.family)
                    state.pending = pending
                    return .sendPending(after: Self.randomDuration(in: delay))
                }
                if delivery == .multicast {
                    guard Self.dropRecentlyMulticast(&response.answers, family: datagram.family, state: &state, now: now) else { return nil }
                }
                guard let bytes = try? response.serialized() else { return nil }
                state.statistics.answered += 1
                return .send(bytes, to: delivery == .multicast ? nil : datagram.source, families: datagram.family)
            case .idle, .stopped:
                return nil
            }
        }
        switch action {
        case .send(let bytes, let address, let families)?:
            try? await socket.send(bytes, to: address, families: families)
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

    private enum ReplyAction {
        case send([UInt8], to: SocketAddress?, families: IPFamilies)
        case sendPending(after: Duration)
        case reprobe
    }

    /// Sends the delayed multicast response gathered so far, if still announced, on each family
    /// a query came on.
    private func sendPending(socket: MulticastDNSSocket) async {
        let messages: [(bytes: [UInt8], family: IPFamilies)] = state.withLock { state in
            guard let pending = state.pending else { return [] }
            state.pending = nil
            guard state.phase == .announced else { return [] }
            var messages = [(bytes: [UInt8], family: IPFamilies)]()
            for family in [IPFamilies.ipv4, .ipv6] where pending.families.contains(family) {
                var answers = pending.answers
                guard Self.dropRecentlyMulticast(&answers, family: family, state: &state, now: .now) else { continue }
                let additionals = pending.additionals.filter { !answers.contains($0) }
                let message = DNSMessage(flags: DNSMessage.responseFlags, answers: answers, additionals: additionals)
                guard let bytes = try? message.serialized() else { continue }
                messages.append((bytes, family))
            }
            if !messages.isEmpty {
                state.statistics.answered += 1
                state.statistics.delayed += 1
            }
            return messages
        }
        for message in messages { try? await socket.send(message.bytes, families: message.family) }
    }

    /// RFC 6762 §6: a record is multicast at most once per second on each family. Removes the
    /// others from `answers`, marks the rest as multicast now; false (and counted as rate-limited)
    /// when none is left.
    private static func dropRecentlyMulticast(
        _ answers: inout [DNSResourceRecord], family: IPFamilies, state: inout State, now: ContinuousClock.Instant
    ) -> Bool {
        answers.removeAll { multicastRecently($0, family: family, state: state, now: now) }
        guard !answers.isEmpty else {
            state.statistics.rateLimited += 1
            return false
        }
        for record in answers { state.lastMulticast[MulticastKey(record: record, family: family.rawValue)] = now }
        return true
    }

    /// Whether `record` was multicast on `family` less than a second before `now`.
    private static func multicastRecently(_ record: DNSResourceRecord, family: IPFamilies, state: State, now: ContinuousClock.Instant) -> Bool {
        guard let last = state.lastMulticast[MulticastKey(record: record, family: family.rawValue)] else { return false }
        return now - last < .seconds(1)
    }

    /// RFC 6762 §7.4: an answer waiting to be sent is dropped when another responder multicasts
    /// the same record with at least the TTL we would give.
    private static func suppressDuplicates(in state: inout State, seen message: DNSMessage) {
        guard var pending = state.pending else { return }
        let before = pending.answers.count
        pending.answers.removeAll { ours in
            message.answers.contains { $0.name == ours.name && $0.data == ours.data && $0.effectiveTTL >= ours.ttl }
        }
        state.statistics.duplicatesSuppressed += before - pending.answers.count
        state.pending = pending
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
