#if os(Linux)
import NIOCore
import Synchronization

/// Finds DNS-SD instances of one service type on one network interface. With the `.builtIn`
/// backend (the default on Linux) it queries with multicast DNS itself (SwiftNIO UDP multicast):
/// sends PTR queries (RFC 6763 §4.1) at 0, 1, 2, 4… seconds, asks for missing SRV, TXT and address
/// records, collects answers in a bounded `DiscoveryCache`, and returns instances whose SRV, TXT
/// and at least one address are known. By default it queries over IPv4 (224.0.0.251) and IPv6
/// (ff02::fb) both, and collects A and AAAA records, so an instance resolves to its IPv4 and IPv6
/// addresses. Responses not sent from port 5353, or with a non-zero opcode or response code, are
/// ignored (RFC 6762 §6, §18). With `.system` it asks the system's DNS-SD daemon (see
/// ``DiscoveryBackend``) and returns the same values.
///
/// Everything returned is untrusted input: a name, address, port or TXT value proves nothing about
/// who answers there. Only the SecureChannel handshake authenticates a peer.
public final class ServiceBrowser: Sendable {
    private let interface: String
    private let type: ServiceType
    private let families: IPFamilies
    private let backend: DiscoveryBackend

    /// A browser for `type` on interface `interface`, over the IP `families` asked for (default
    /// both; one is left out when the interface has no address of it), with `backend` (`.system`:
    /// the system's DNS-SD daemon, limited to that interface, on the families it is configured for;
    /// see ``DiscoveryBackend``). Nothing is sent until `browse` or `resolve`.
    public init(
        interface: String, type: ServiceType = .secureChannel, families: IPFamilies = .all, backend: DiscoveryBackend = .platformDefault
    ) {
        self.interface = interface
        self.type = type
        self.families = families
        self.backend = backend
    }

    /// Browses for `timeout` (at most a day: a longer one counts as a day) and returns every
    /// instance resolved by then, sorted by name.
    public func browse(timeout: Duration) async throws(ServiceDiscoveryError) -> [ServiceInstance] {
        if backend == .system {
            return try await SystemServiceBrowsing.browse(
                type: type, interfaceIndex: try DiscoveryBackend.interfaceIndex(interface), timeout: timeout,
                library: try SystemDNSServiceLibrary.shared.get())
        }
        return try await run(timeout: timeout) { _ in false }.resolvedInstances(of: type).sorted { $0.name < $1.name }
    }

    /// Browses until the instance named `instanceName` is resolved, or throws `notFound` after
    /// `timeout` (at most a day: a longer one counts as a day).
    public func resolve(instanceName: String, timeout: Duration) async throws(ServiceDiscoveryError) -> ServiceInstance {
        if backend == .system {
            return try await SystemServiceBrowsing.resolve(
                instanceName: instanceName, type: type, interfaceIndex: try DiscoveryBackend.interfaceIndex(interface), timeout: timeout,
                library: try SystemDNSServiceLibrary.shared.get())
        }
        let name = try ServiceInstanceName(instanceName).fullName(type: type)
        let type = self.type
        let cache = try await run(timeout: timeout, extraNames: [name]) { cache in cache.resolved(name, type: type) != nil }
        guard let instance = cache.resolved(name, type: type) else { throw .notFound(instanceName) }
        return instance
    }

    /// Runs the querier until `timeout` or until `done` returns true for the cache.
    private func run(
        timeout: Duration, extraNames: [DNSName] = [], done: @escaping @Sendable (DiscoveryCache) -> Bool
    ) async throws(ServiceDiscoveryError) -> DiscoveryCache {
        let socket = try await MulticastDNSSocket.open(interface: interface, families: families)
        let cache = CacheBox()
        let type = self.type
        let querier = Task {
            var interval = Duration.seconds(1)
            while !Task.isCancelled {
                let questions = cache.mutex.withLock { cache in
                    let names = Array(Set(cache.instanceNames(of: type) + extraNames))
                    return cache.missingQuestions(for: names, type: type)
                }
                let query = DNSMessage(questions: [DNSQuestion(name: type.domainName, type: .ptr)] + questions)
                if let bytes = try? query.serialized() { try? await socket.send(bytes) }
                try? await Task.sleep(for: interval)
                interval = min(interval * 2, .seconds(60))
            }
        }
        let deadline = ContinuousClock.now + timeout.boundedForDiscovery
        let timer = Task {
            try? await Task.sleep(until: deadline)
            await socket.close()
        }
        for await datagram in socket.datagrams {
            // The datagrams still queued when the socket closes are not read: the timeout holds.
            guard ContinuousClock.now < deadline else { break }
            // RFC 6762 §6: the browser asks for no unicast answer (no QU question), so a response
            // sent to our address alone is unsolicited and silently ignored: it reached no other
            // host, so no responder could defend its records against a goodbye or a flush in it.
            // RFC 6762 §6, §18: a response from a port other than 5353, or with a non-zero
            // opcode or response code, is no multicast DNS response.
            guard datagram.toGroup, let message = try? DNSMessage(parsing: datagram.bytes), message.isResponse,
                !message.mustBeIgnored(fromPort: datagram.source.port ?? 0)
            else { continue }
            let finished = cache.mutex.withLock { cache in
                cache.insert(message.answers + message.additionals, now: .now, about: type, names: extraNames)
                return done(cache)
            }
            if finished { break }
        }
        querier.cancel()
        timer.cancel()
        await socket.close()
        return cache.mutex.withLock { cache in
            cache.expire(now: .now)  // what expired, or said goodbye, since the last response
            return cache
        }
    }
}

/// The browser's cache, shared by its query and receive tasks.
private final class CacheBox: Sendable {
    let mutex = Mutex(DiscoveryCache())
}
#endif
