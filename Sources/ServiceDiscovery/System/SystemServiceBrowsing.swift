import CDNSServiceShim

/// Browsing and resolving through the system's DNS-SD daemon (the `.system` backend):
/// `DNSServiceBrowse` for instance names, `DNSServiceResolve` for each instance's host, port and
/// TXT record, and `DNSServiceQueryRecord` (A and AAAA) for the host's addresses. An instance is
/// returned once its host, port, TXT record and at least one address are known, exactly as the
/// built-in browser returns them; what the daemon reports is as untrusted as what the network says.
enum SystemServiceBrowsing {
    /// How long `resolve` waits, after the first address, for the other address family's query to
    /// answer, so an instance with IPv4 and IPv6 addresses is not returned with one family only.
    static let otherFamilyGrace = Duration.milliseconds(500)

    /// `_service._proto` as the DNS-SD API takes it.
    static func registrationType(_ type: ServiceType) -> String { "_\(type.service)._\(type.transport)" }

    /// Browses for `timeout` and returns every instance resolved by then, sorted by name.
    static func browse(
        type: ServiceType, interfaceIndex: UInt32, timeout: Duration, library: SystemDNSServiceLibrary
    ) async throws(ServiceDiscoveryError) -> [ServiceInstance] {
        try await SystemDNSServiceSession.perform(library: library) { session in
            let state = BrowseState(session: session, type: type)
            do throws(ServiceDiscoveryError) {
                try state.startBrowsing(interfaceIndex: interfaceIndex)
            } catch {
                return .failure(error)
            }
            switch session.run(until: .now + timeout, done: { false }) {
            case .timedOut, .done: return .success(state.resolvedInstances().sorted { $0.name < $1.name })
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
            let state = BrowseState(session: session, type: type)
            do throws(ServiceDiscoveryError) {
                // Resolve the name directly as well as browsing: an instance answers a resolve
                // even when its PTR record has not been seen yet.
                try state.startBrowsing(interfaceIndex: interfaceIndex)
                try state.startResolving(instanceName, interfaceIndex: interfaceIndex)
            } catch {
                return .failure(error)
            }
            let deadline = ContinuousClock.now + timeout
            var outcome = session.run(until: deadline) { state.resolved(instanceName) != nil }
            if outcome == .done && !state.hasBothAddressFamilies(instanceName) {
                outcome = session.run(until: min(.now + otherFamilyGrace, deadline)) { state.hasBothAddressFamilies(instanceName) }
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
    struct Candidate {
        var sightings = 0
        var interfaceIndex: UInt32
        var resolving: SFDNSServiceRef?
        var host: String?
        var port: UInt16 = 0
        var txt = TXTRecord()
    }

    let session: SystemDNSServiceSession
    let type: ServiceType
    var candidates = [String: Candidate]()
    /// Addresses by lower-cased host name, and the host names whose queries run.
    var addresses = [String: Set<IPAddress>]()
    var queried = Set<String>()
    /// The record types (A, AAAA) that have given an address, by lower-cased host name.
    var answeredTypes = [String: Set<UInt16>]()

    init(session: SystemDNSServiceSession, type: ServiceType) {
        self.session = session
        self.type = type
    }

    func startBrowsing(interfaceIndex: UInt32) throws(ServiceDiscoveryError) {
        let library = session.library
        let type = SystemServiceBrowsing.registrationType(self.type)
        let box = ReplyBox<BrowseReply> { [unowned self] reply in browsed(reply) }
        _ = try session.start("DNSServiceBrowse", context: box) { ref, context in
            library.browse(ref, 0, interfaceIndex, type, "local.", browseCallback, context)
        }
    }

    func startResolving(_ name: String, interfaceIndex: UInt32) throws(ServiceDiscoveryError) {
        let library = session.library
        let type = SystemServiceBrowsing.registrationType(self.type)
        let box = ReplyBox<ResolveReply> { [unowned self] reply in resolved(name, reply) }
        let ref = try session.start("DNSServiceResolve", context: box) { ref, context in
            library.resolve(ref, 0, interfaceIndex, name, type, "local.", resolveCallback, context)
        }
        candidates[name, default: Candidate(interfaceIndex: interfaceIndex)].resolving = ref
    }

    private func browsed(_ reply: BrowseReply) {
        guard reply.error == SFDNSServiceErrNoError else {
            session.failure = SystemDNSServiceLibrary.startError("DNSServiceBrowse", reply.error)
            return
        }
        guard let name = reply.name else { return }
        if reply.flags & UInt32(SFDNSServiceFlagsAdd) != 0 {
            var candidate = candidates[name] ?? Candidate(interfaceIndex: reply.interfaceIndex)
            candidate.sightings += 1
            candidates[name] = candidate
            if candidate.resolving == nil && candidate.host == nil {
                do throws(ServiceDiscoveryError) {
                    try startResolving(name, interfaceIndex: reply.interfaceIndex)
                } catch {
                    session.failure = error
                }
            }
        } else if var candidate = candidates[name] {
            // Avahi reports an instance once per interface and protocol; it is gone when every
            // sighting has been withdrawn.
            candidate.sightings -= 1
            if candidate.sightings <= 0 {
                if let ref = candidate.resolving { session.finish(ref) }
                candidates[name] = nil
            } else {
                candidates[name] = candidate
            }
        }
    }

    private func resolved(_ name: String, _ reply: ResolveReply) {
        guard var candidate = candidates[name] else { return }
        guard reply.error == SFDNSServiceErrNoError, let host = reply.host else { return }
        candidate.host = host
        candidate.port = reply.port
        candidate.txt = reply.txt
        if let ref = candidate.resolving { session.finish(ref) }
        candidate.resolving = nil
        candidates[name] = candidate
        let key = host.lowercased()
        guard !queried.contains(key) else { return }
        queried.insert(key)
        let library = session.library
        for recordType in [UInt16(SFDNSServiceTypeA), UInt16(SFDNSServiceTypeAAAA)] {
            let box = ReplyBox<RecordReply> { [unowned self] reply in recorded(key, recordType, reply) }
            do throws(ServiceDiscoveryError) {
                _ = try session.start("DNSServiceQueryRecord", context: box) { ref, context in
                    library.queryRecord(ref, 0, candidate.interfaceIndex, host, recordType, UInt16(SFDNSServiceClassIN), recordCallback, context)
                }
            } catch {
                session.failure = error
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
