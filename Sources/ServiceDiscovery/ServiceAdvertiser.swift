#if os(Linux)
import Glibc
import NIOCore
import Synchronization

/// Advertises one DNS-SD service instance on one network interface with multicast DNS (Linux,
/// SwiftNIO UDP multicast): probes for its names (RFC 6762 §8.1, renaming `Name (2)`, `Name (3)`…
/// on conflict), announces (§8.3), answers queries until stopped (§6, with known-answer
/// suppression, legacy unicast and the QU bit) and sends a goodbye (TTL 0) on `stop()` (§10.1).
///
/// Hardening: malformed packets are counted and dropped; the same record is multicast at most
/// once per second (§6); replies are limited to a burst of 20 and 20 per second overall; unicast
/// replies go only to sources on the interface's subnet (§11).
/// Limits: IPv4 socket only (AAAA records for the interface's IPv6 addresses are still published);
/// conflicts found after announcing are not re-probed; responses are not randomly delayed.
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
        /// Renames caused by name conflicts while probing.
        public var conflicts = 0
        /// Unicast replies not sent because the querier was not on the interface's subnet.
        public var offLink = 0
    }

    private enum Phase { case idle, probing, announced, stopped }

    private struct State {
        var phase = Phase.idle
        var records: ServiceRecords
        var instanceConflict = false
        var hostConflict = false
        var lastMulticast = [DNSResourceRecord: ContinuousClock.Instant]()
        var tokens = 20.0
        var lastRefill = ContinuousClock.now
        var statistics = Statistics()
    }

    private let interface: String
    private let baseInstance: ServiceInstanceName
    private let baseHost: String
    private let state: Mutex<State>
    private let socketBox = Mutex<MulticastDNSSocket?>(nil)
    private let receiveTask = Mutex<Task<Void, Never>?>(nil)

    private let system: SystemServiceRegistration?

    /// Prepares to advertise `instanceName` of `type` at `port` with the TXT attributes `txt` on
    /// interface `interface`, with host name `hostName.local.` (default: this machine's host name,
    /// reduced to letters, digits and hyphens). Nothing is sent until `start()`.
    ///
    /// With `backend` `.system` the system's DNS-SD daemon publishes the service on that interface
    /// under the daemon's own host name (a `hostName` is then refused with `invalidHostName`), and
    /// `statistics` stays zero; see ``DiscoveryBackend``.
    public init(
        interface: String, instanceName: String, type: ServiceType = .secureChannel, port: UInt16, txt: TXTRecord = TXTRecord(),
        hostName: String? = nil, backend: DiscoveryBackend = .platformDefault
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
            socket = try await MulticastDNSSocket.open(interface: interface)
        } catch {
            state.withLock { $0.phase = .stopped }
            throw error
        }
        socketBox.withLock { $0 = socket }
        let addresses = socket.addresses
        let task = Task { [self] in
            for await datagram in socket.datagrams { await handle(datagram, socket: socket) }
        }
        receiveTask.withLock { $0 = task }
        do {
            var instanceAttempt = 1, hostAttempt = 1
            while true {
                let instanceName = instanceAttempt == 1 ? baseInstance.value : Self.renamed(baseInstance.value, instanceAttempt)
                let hostLabel = hostAttempt == 1 ? baseHost : "\(baseHost.prefix(58))-\(hostAttempt)"
                let current = state.withLock { $0.records }
                let records = try ServiceRecords(
                    instance: try ServiceInstanceName(instanceName), type: current.type, hostLabel: hostLabel, port: current.port,
                    txt: current.txt, addresses: addresses)
                state.withLock {
                    $0.records = records
                    $0.instanceConflict = false
                    $0.hostConflict = false
                }
                var conflict = (instance: false, host: false)
                for _ in 0..<3 {
                    try await socket.send(try encode(records.probe()))
                    try? await Task.sleep(for: .milliseconds(250))
                    conflict = state.withLock { ($0.instanceConflict, $0.hostConflict) }
                    if conflict.instance || conflict.host { break }
                }
                if !conflict.instance && !conflict.host { break }
                state.withLock { $0.statistics.conflicts += 1 }
                if conflict.instance { instanceAttempt += 1 }
                if conflict.host { hostAttempt += 1 }
                guard instanceAttempt <= 10, hostAttempt <= 10 else { throw ServiceDiscoveryError.nameConflict(records.instanceName.description) }
                // RFC 6762 §8.1: after a conflict, wait before probing again.
                try? await Task.sleep(for: .seconds(1))
            }
            let records = state.withLock { state in
                state.phase = .announced
                return state.records
            }
            try await socket.send(try encode(records.announcement()))
            Task { [self] in
                try? await Task.sleep(for: .seconds(1))
                guard state.withLock({ $0.phase == .announced }) else { return }
                try? await socket.send(try encode(records.announcement()))
            }
            return records
        } catch {
            await shutDown(sendGoodbye: false)
            throw error as? ServiceDiscoveryError ?? .socket("\(error)")
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
        let wasAnnounced = state.withLock { state in
            defer { state.phase = .stopped }
            return state.phase == .announced
        }
        guard let socket = socketBox.withLock({ box in defer { box = nil }; return box }) else { return }
        if sendGoodbye && wasAnnounced, let bytes = try? encode(records.goodbye()) {
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
        let reply: (bytes: [UInt8], to: SocketAddress?)? = state.withLock { state in
            switch state.phase {
            case .probing:
                let found = state.records.conflicts(with: message)
                if found.instance { state.instanceConflict = true }
                if found.host { state.hostConflict = true }
                return nil
            case .announced:
                guard let answer = state.records.response(to: message, sourcePort: port) else { return nil }
                guard answer.delivery == .multicast || onLink else {
                    state.statistics.offLink += 1
                    return nil
                }
                var response = answer.message
                let delivery = answer.delivery
                let now = ContinuousClock.now
                state.tokens = min(20, state.tokens + Double((now - state.lastRefill) / .milliseconds(50)))
                state.lastRefill = now
                guard state.tokens >= 1 else {
                    state.statistics.rateLimited += 1
                    return nil
                }
                if delivery == .multicast {
                    // RFC 6762 §6: a record is multicast at most once per second.
                    response.answers.removeAll { record in
                        guard let last = state.lastMulticast[record] else { return false }
                        return now - last < .seconds(1)
                    }
                    guard !response.answers.isEmpty else {
                        state.statistics.rateLimited += 1
                        return nil
                    }
                    for record in response.answers { state.lastMulticast[record] = now }
                }
                guard let bytes = try? response.serialized() else { return nil }
                state.tokens -= 1
                state.statistics.answered += 1
                return (bytes, delivery == .multicast ? nil : datagram.source)
            case .idle, .stopped:
                return nil
            }
        }
        if let reply { try? await socket.send(reply.bytes, to: reply.to) }
    }

    static func renamed(_ base: String, _ attempt: Int) -> String {
        let suffix = " (\(attempt))"
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
