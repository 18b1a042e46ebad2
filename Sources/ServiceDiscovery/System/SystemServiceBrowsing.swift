import CDNSServiceShim

/// Browsing and resolving through the system's DNS-SD daemon (the `.system` backend):
/// `DNSServiceBrowse` for instance names, `DNSServiceResolve` for each instance's host, port and
/// TXT record, and `DNSServiceQueryRecord` (A and AAAA) for the host's addresses. An instance is
/// returned once its host, port, TXT record and at least one address are known, exactly as the
/// built-in browser returns them; what the daemon reports is as untrusted as what the network says.
///
/// Bounded: a browse keeps at most `maximumCandidates` instance names, runs at most
/// `maximumResolves` resolves at once (the other names wait their turn, oldest first; a resolve
/// still unanswered after `stalledResolveTimeout` while others wait is given up) and queries the
/// addresses of at most `maximumHosts` hosts. A resolve or address query that cannot start leaves
/// that instance out, not the browse; only when none could start does the browse fail, with the
/// error of the last one. `resolve` asks about its one instance only.
enum SystemServiceBrowsing {
    /// How long `resolve` waits, after the first address, for the other address family's query to
    /// answer, so an instance with IPv4 and IPv6 addresses is not returned with one family only.
    static let otherFamilyGrace = Duration.milliseconds(500)
    /// The most instance names one browse keeps, as the built-in browser's cache keeps at most 512
    /// records. When full, a new name takes the place of the oldest one waiting for its resolve (or
    /// whose resolve failed); one resolving or resolved is kept, and with no other the new name is
    /// left out.
    static let maximumCandidates = 512
    /// The most resolves one browse runs at once (each is an operation of the daemon's, with Avahi
    /// a D-Bus client and a thread of the browsing process).
    static let maximumResolves = 16
    /// The most hosts whose addresses one browse asks for (two queries each, A and AAAA, kept open
    /// until the browse ends); the instances of other hosts are left out.
    static let maximumHosts = 32
    /// How long a resolve may go unanswered while other instances wait for its place: then it is
    /// given up (mDNSResponder never ends a resolve by itself, so names nobody answers for would
    /// otherwise hold every place).
    static let stalledResolveTimeout = Duration.seconds(2)

    /// `_service._proto` as the DNS-SD API takes it.
    static func registrationType(_ type: ServiceType) -> String { "_\(type.service)._\(type.transport)" }

    /// Browses for `timeout` and returns every instance resolved by then, sorted by name.
    static func browse(
        type: ServiceType, interfaceIndex: UInt32, timeout: Duration, library: SystemDNSServiceLibrary
    ) async throws(ServiceDiscoveryError) -> [ServiceInstance] {
        try await browseCounting(type: type, interfaceIndex: interfaceIndex, timeout: timeout, library: library).instances
    }

    /// `browse`, also returning how many instance names or hosts were left out: beyond the caps,
    /// or because their resolve or address query could not start, failed or was given up.
    static func browseCounting(
        type: ServiceType, interfaceIndex: UInt32, timeout: Duration, library: SystemDNSServiceLibrary,
        stalledResolveTimeout: Duration = SystemServiceBrowsing.stalledResolveTimeout
    ) async throws(ServiceDiscoveryError) -> (instances: [ServiceInstance], skipped: Int) {
        try await SystemDNSServiceSession.perform(library: library) { session in
            let state = BrowseState(session: session, type: type, only: nil, stalledResolveTimeout: stalledResolveTimeout)
            do throws(ServiceDiscoveryError) {
                try state.startBrowsing(interfaceIndex: interfaceIndex)
            } catch {
                return .failure(error)
            }
            switch state.run(until: .now + timeout.boundedForDiscovery, done: { false }) {
            case .timedOut, .done:
                if let error = state.nothingStarted { return .failure(error) }
                return .success((instances: state.resolvedInstances().sorted { $0.name < $1.name }, skipped: state.skipped))
            case .cancelled: return .failure(.cancelled)
            case .failed(let error): return .failure(error)
            }
        }
    }

    /// Browses until the instance named `instanceName` is resolved, or throws `notFound` after `timeout`.
    static func resolve(
        instanceName: String, type: ServiceType, interfaceIndex: UInt32, timeout: Duration, library: SystemDNSServiceLibrary
    ) async throws(ServiceDiscoveryError) -> ServiceInstance {
        _ = try ServiceInstanceName(instanceName)
        return try await SystemDNSServiceSession.perform(library: library) { session in
            // Only this name is resolved: the browse's other names are not kept.
            let state = BrowseState(session: session, type: type, only: instanceName, stalledResolveTimeout: stalledResolveTimeout)
            do throws(ServiceDiscoveryError) {
                // Resolve the name directly as well as browsing: an instance answers a resolve
                // even when its PTR record has not been seen yet.
                try state.startBrowsing(interfaceIndex: interfaceIndex)
                try state.startResolving(instanceName, interfaceIndex: interfaceIndex)
            } catch {
                return .failure(error)
            }
            let deadline = ContinuousClock.now + timeout.boundedForDiscovery
            var outcome = state.run(until: deadline) { state.resolved(instanceName) != nil }
            if outcome == .done && !state.hasBothAddressFamilies(instanceName) {
                outcome = state.run(until: min(.now + otherFamilyGrace, deadline)) { state.hasBothAddressFamilies(instanceName) }
            }
            switch outcome {
            case .done, .timedOut:
                guard let instance = state.resolved(instanceName) else { return .failure(.notFound(instanceName)) }
                return .success(instance)
            case .cancelled: return .failure(.cancelled)
            case .failed(let error): return .failure(error)
            }
        }
    }
}

/// What one browse has learned; confined to its session's thread.
private final class BrowseState {
    /// Where an instance name is in being resolved.
    enum Status {
        /// Waiting for a place among the `maximumResolves` resolves.
        case queued
        /// Being resolved by this operation, started at that instant.
        case resolving(SFDNSServiceRef, since: ContinuousClock.Instant)
        /// Host, port and TXT record known.
        case resolved
        /// Its resolve could not start, failed or was given up; not tried again while it is kept.
        case failed

        var isQueued: Bool {
            if case .queued = self { return true }
            return false
        }
        var isResolving: Bool {
            if case .resolving = self { return true }
            return false
        }
        /// Whether it gives its place to a new name when the candidates are full.
        var isReplaceable: Bool {
            switch self {
            case .queued, .failed: return true
            case .resolving, .resolved: return false
            }
        }
    }

    struct Candidate {
        var sightings = 0
        var interfaceIndex: UInt32
        /// The order it was first reported in: the oldest waits least, and gives its place first.
        var order: Int
        var status = Status.queued
        var host: String?
        var port: UInt16 = 0
        var txt = TXTRecord()
    }

    let session: SystemDNSServiceSession
    let type: ServiceType
    /// The one name `resolve` asks about (nil: every name the browse reports).
    let only: String?
    let stalledResolveTimeout: Duration
    var candidates = [String: Candidate]()
    private var nextOrder = 0
    /// Addresses by lower-cased host name, and the host names whose queries run.
    var addresses = [String: Set<IPAddress>]()
    var queried = Set<String>()
    /// The record types (A, AAAA) that have given an address, by lower-cased host name.
    var answeredTypes = [String: Set<UInt16>]()
    /// Instance names and hosts left out: beyond the caps, or their operation could not start,
    /// failed or was given up.
    private(set) var skipped = 0
    /// Whether a resolve or an address query has started, and the error of the last that could not.
    private var startedAny = false
    private var startError: ServiceDiscoveryError?

    init(session: SystemDNSServiceSession, type: ServiceType, only: String?, stalledResolveTimeout: Duration) {
        self.session = session
        self.type = type
        self.only = only
        self.stalledResolveTimeout = stalledResolveTimeout
    }

    /// The error to fail with when resolves or address queries were tried and none could start.
    var nothingStarted: ServiceDiscoveryError? { startedAny ? nil : startError }

    /// Runs the session until `deadline` or `done()`. Between batches of replies (once the
    /// references finished in the last one are deallocated, so finished resolves no longer count)
    /// it starts the queued resolves there is room for; every `tick` it gives up the resolves that
    /// stalled while others wait.
    func run(until deadline: ContinuousClock.Instant, done: () -> Bool) -> SystemDNSServiceSession.Outcome {
        let tick = min(stalledResolveTimeout, .milliseconds(250))
        while true {
            let outcome = session.run(until: min(deadline, .now + tick)) {
                startQueued()
                return done()
            }
            guard outcome == .timedOut, ContinuousClock.now < deadline else { return outcome }
            giveUpStalledResolves(now: .now)
        }
    }

    func startBrowsing(interfaceIndex: UInt32) throws(ServiceDiscoveryError) {
        let library = session.library
        let type = SystemServiceBrowsing.registrationType(self.type)
        let box = ReplyBox<BrowseReply> { [unowned self] reply in browsed(reply) }
        _ = try session.start("DNSServiceBrowse", context: box) { ref, context in
            library.browse(ref, 0, interfaceIndex, type, "local.", browseCallback, context)
        }
    }

    /// Resolves `name` at once, whatever the caps (`resolve`'s own name); throws when the resolve
    /// cannot start.
    func startResolving(_ name: String, interfaceIndex: UInt32) throws(ServiceDiscoveryError) {
        let ref = try startResolve(name, interfaceIndex: interfaceIndex)
        var candidate = candidates[name] ?? Candidate(interfaceIndex: interfaceIndex, order: takeOrder())
        candidate.status = .resolving(ref, since: .now)
        candidates[name] = candidate
        startedAny = true
    }

    private func startResolve(_ name: String, interfaceIndex: UInt32) throws(ServiceDiscoveryError) -> SFDNSServiceRef {
        let library = session.library
        let type = SystemServiceBrowsing.registrationType(self.type)
        let box = ReplyBox<ResolveReply> { [unowned self] reply in resolveReplied(name, reply) }
        return try session.start("DNSServiceResolve", context: box) { ref, context in
            library.resolve(ref, 0, interfaceIndex, name, type, "local.", resolveCallback, context)
        }
    }

    private func takeOrder() -> Int {
        defer { nextOrder += 1 }
        return nextOrder
    }

    /// Starts the resolves of queued names, oldest first, while fewer than `maximumResolves` run.
    /// One that cannot start leaves its name out (failed), and the next is tried. Called only
    /// between batches of replies: a resolve finished in a batch is deallocated after it, so the
    /// references open never exceed the cap.
    private func startQueued() {
        var open = candidates.values.reduce(0) { $1.status.isResolving ? $0 + 1 : $0 }
        while open < SystemServiceBrowsing.maximumResolves {
            guard let next = candidates.filter({ $0.value.status.isQueued }).min(by: { $0.value.order < $1.value.order }) else { return }
            do throws(ServiceDiscoveryError) {
                let ref = try startResolve(next.key, interfaceIndex: next.value.interfaceIndex)
                candidates[next.key]?.status = .resolving(ref, since: .now)
                startedAny = true
                open += 1
            } catch {
                candidates[next.key]?.status = .failed
                startError = error
                skipped += 1
            }
        }
    }

    /// Gives up, at `now`, the resolves unanswered for `stalledResolveTimeout` while other names
    /// wait (`resolve`'s own name never): their places go to the queued names at the next batch.
    private func giveUpStalledResolves(now: ContinuousClock.Instant) {
        guard candidates.values.contains(where: { $0.status.isQueued }) else { return }
        for (name, candidate) in candidates where name != only {
            guard case .resolving(let ref, let since) = candidate.status, now - since >= stalledResolveTimeout else { continue }
            session.finish(ref)
            candidates[name]?.status = .failed
            skipped += 1
        }
    }

    /// Whether a new name fits: below `maximumCandidates`, or once the oldest queued or failed
    /// name is dropped for it.
    private func makeRoom() -> Bool {
        guard candidates.count >= SystemServiceBrowsing.maximumCandidates else { return true }
        guard let oldest = candidates.filter({ $0.value.status.isReplaceable }).min(by: { $0.value.order < $1.value.order }) else {
            return false
        }
        candidates[oldest.key] = nil
        skipped += 1
        return true
    }

    private func browsed(_ reply: BrowseReply) {
        guard reply.error == SFDNSServiceErrNoError else {
            session.failure = SystemDNSServiceLibrary.startError("DNSServiceBrowse", reply.error)
            return
        }
        guard let name = reply.name else { return }
        if let only, name != only { return }
        if reply.flags & UInt32(SFDNSServiceFlagsAdd) != 0 {
            if var candidate = candidates[name] {
                candidate.sightings += 1
                candidates[name] = candidate
                return
            }
            guard makeRoom() else {
                skipped += 1
                return
            }
            // Its resolve starts after this batch of replies, when there is room (`startQueued`).
            var candidate = Candidate(interfaceIndex: reply.interfaceIndex, order: takeOrder())
            candidate.sightings = 1
            candidates[name] = candidate
        } else if var candidate = candidates[name] {
            // Avahi reports an instance once per interface and protocol; it is gone when every
            // sighting has been withdrawn.
            candidate.sightings -= 1
            if candidate.sightings <= 0 {
                if case .resolving(let ref, _) = candidate.status { session.finish(ref) }
                candidates[name] = nil
            } else {
                candidates[name] = candidate
            }
        }
    }

    private func resolveReplied(_ name: String, _ reply: ResolveReply) {
        guard var candidate = candidates[name], case .resolving(let ref, _) = candidate.status else { return }
        session.finish(ref)
        guard reply.error == SFDNSServiceErrNoError, let host = reply.host else {
            // The daemon could not resolve it (Avahi's resolver gives up after a while): its place
            // goes to the next name.
            candidate.status = .failed
            candidates[name] = candidate
            skipped += 1
            return
        }
        candidate.host = host
        candidate.port = reply.port
        candidate.txt = reply.txt
        candidate.status = .resolved
        candidates[name] = candidate
        queryAddresses(of: host, interfaceIndex: candidate.interfaceIndex)
    }

    /// Starts the A and AAAA queries of `host`, unless they run already or `maximumHosts` hosts
    /// are queried. A query that cannot start is left out.
    private func queryAddresses(of host: String, interfaceIndex: UInt32) {
        let key = host.lowercased()
        guard !queried.contains(key) else { return }
        guard queried.count < SystemServiceBrowsing.maximumHosts else {
            skipped += 1
            return
        }
        queried.insert(key)
        let library = session.library
        for recordType in [UInt16(SFDNSServiceTypeA), UInt16(SFDNSServiceTypeAAAA)] {
            let box = ReplyBox<RecordReply> { [unowned self] reply in recorded(key, recordType, reply) }
            do throws(ServiceDiscoveryError) {
                _ = try session.start("DNSServiceQueryRecord", context: box) { ref, context in
                    library.queryRecord(ref, 0, interfaceIndex, host, recordType, UInt16(SFDNSServiceClassIN), recordCallback, context)
                }
                startedAny = true
            } catch {
                startError = error
                skipped += 1
            }
        }
    }

    private func recorded(_ host: String, _ recordType: UInt16, _ reply: RecordReply) {
        guard reply.error == SFDNSServiceErrNoError, let address = reply.address else { return }
        if reply.flags & UInt32(SFDNSServiceFlagsAdd) != 0 {
            addresses[host, default: []].insert(address)
            answeredTypes[host, default: []].insert(recordType)
        } else {
            addresses[host]?.remove(address)
        }
    }

    /// The instance named `name`, when its host, port, TXT record and an address are known.
    func resolved(_ name: String) -> ServiceInstance? {
        guard let candidate = candidates[name], let host = candidate.host,
            let found = addresses[host.lowercased()], !found.isEmpty,
            let hostName = try? DNSName(host)
        else { return nil }
        return ServiceInstance(name: name, type: type, host: hostName, addresses: Array(found), port: candidate.port, txt: candidate.txt)
    }

    /// Whether both the A and the AAAA query of the instance's host have given an address.
    func hasBothAddressFamilies(_ name: String) -> Bool {
        guard let host = candidates[name]?.host else { return false }
        return answeredTypes[host.lowercased()]?.count == 2
    }

    func resolvedInstances() -> [ServiceInstance] {
        candidates.keys.compactMap(resolved)
    }
}

/// A reply callback's context: the closure the C callback hands the decoded reply to.
final class ReplyBox<Reply> {
    let handle: (Reply) -> Void
    init(_ handle: @escaping (Reply) -> Void) { self.handle = handle }

    static func deliver(_ reply: Reply, to context: UnsafeMutableRawPointer?) {
        guard let context else { return }
        Unmanaged<ReplyBox<Reply>>.fromOpaque(context).takeUnretainedValue().handle(reply)
    }
}

struct BrowseReply {
    let flags: UInt32, interfaceIndex: UInt32, error: Int32
    let name: String?
}

struct ResolveReply {
    let error: Int32
    let host: String?
    let port: UInt16
    let txt: TXTRecord
}

struct RecordReply {
    let flags: UInt32, error: Int32
    let address: IPAddress?
}

private let browseCallback: SFDNSServiceBrowseReply = { _, flags, interfaceIndex, error, name, _, _, context in
    ReplyBox<BrowseReply>.deliver(
        BrowseReply(flags: flags, interfaceIndex: interfaceIndex, error: error, name: name.map { String(cString: $0) }), to: context)
}

private let resolveCallback: SFDNSServiceResolveReply = { _, _, _, error, _, host, port, txtLength, txt, context in
    let bytes = txt.map { Array(UnsafeBufferPointer(start: $0, count: Int(txtLength))) } ?? []
    ReplyBox<ResolveReply>.deliver(
        ResolveReply(error: error, host: host.map { String(cString: $0) }, port: UInt16(bigEndian: port), txt: TXTRecord(wire: bytes)),
        to: context)
}

private let recordCallback: SFDNSServiceQueryRecordReply = { _, flags, _, error, _, type, _, length, data, _, context in
    var address: IPAddress?
    if let data {
        let bytes = Array(UnsafeRawBufferPointer(start: data, count: Int(length)))
        switch (Int(type), bytes.count) {
        case (Int(SFDNSServiceTypeA), 4): address = IPv4Address(bytes: bytes).map(IPAddress.v4)
        case (Int(SFDNSServiceTypeAAAA), 16): address = IPv6Address(bytes: bytes).map(IPAddress.v6)
        default: break
        }
    }
    ReplyBox<RecordReply>.deliver(RecordReply(flags: flags, error: error, address: address), to: context)
}

extension TXTRecord {
    /// Reads a TXT record's wire form (length-prefixed strings, as `DNSServiceResolve` delivers it);
    /// a string whose length runs past the end is dropped with everything after it.
    init(wire bytes: [UInt8]) {
        var strings = [[UInt8]]()
        var index = 0
        while index < bytes.count {
            let length = Int(bytes[index])
            guard index + 1 + length <= bytes.count else { break }
            strings.append(Array(bytes[(index + 1)..<(index + 1 + length)]))
            index += 1 + length
        }
        self.init(strings: strings)
    }

    /// The TXT record's wire form (length-prefixed strings), as `DNSServiceRegister` takes it.
    var wire: [UInt8] {
        strings.flatMap { [UInt8($0.count)] + $0 }
    }
}
