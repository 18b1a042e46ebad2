import CDNSServiceShim
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One service registered with the system's DNS-SD daemon (the `.system` backend of
/// ``ServiceAdvertiser``): `DNSServiceRegister` with the daemon's own host name, kept on a thread
/// of its own until `stop()` deallocates the reference, which makes the daemon withdraw the records
/// (with its goodbye). Name conflicts are resolved by the daemon, which picks the next free name.
final class SystemServiceRegistration: Sendable {
    private enum Phase { case idle, started, stopped }

    private let library: SystemDNSServiceLibrary
    private let state = Mutex<(phase: Phase, session: SystemDNSServiceSession?)>((.idle, nil))
    private let finished = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// How long `start()` waits for the daemon to confirm the registration.
    static let registrationTimeout = Duration.seconds(30)
    /// How long `start()` waits to look its own records up for the returned `ServiceRecords`.
    static let lookupTimeout = Duration.seconds(5)

    init(library: SystemDNSServiceLibrary) {
        self.library = library
    }

    /// Registers `instance` of `type` at `port` with `txt` on `interfaceIndex` (0: every
    /// interface the daemon uses), waits for the daemon's confirmation and returns the records as
    /// the daemon publishes them (its final instance name; host and addresses as a lookup of the
    /// instance through the daemon reports them, or this machine's host name and no address if
    /// that lookup fails).
    func start(
        instance: ServiceInstanceName, type: ServiceType, port: UInt16, txt: TXTRecord, interfaceIndex: UInt32
    ) async throws(ServiceDiscoveryError) -> ServiceRecords {
        let library = self.library
        let claimed = state.withLock { state -> Result<SystemDNSServiceSession, ServiceDiscoveryError> in
            guard state.phase == .idle else { return .failure(.invalidState("the advertiser was already started")) }
            state.phase = .stopped
            do throws(ServiceDiscoveryError) {
                let session = try SystemDNSServiceSession(library: library)
                state = (.started, session)
                return .success(session)
            } catch {
                return .failure(error)
            }
        }
        let session = try claimed.get()
        let registered = await withTaskCancellationHandler {
            await register(session: session, instance: instance, type: type, port: port, txt: txt, interfaceIndex: interfaceIndex)
        } onCancel: {
            session.cancel()
        }
        let name = try registered.get()
        let chosen = (try? ServiceInstanceName(name)) ?? instance
        let found = try? await SystemServiceBrowsing.resolve(
            instanceName: chosen.value, type: type, interfaceIndex: interfaceIndex, timeout: Self.lookupTimeout, library: library)
        let hostLabel = found.flatMap { $0.host.labels.first }.map { String(decoding: $0, as: UTF8.self) }
        do {
            return try ServiceRecords(
                instance: chosen, type: type, hostLabel: hostLabel ?? ServiceAdvertiser.defaultHostLabel(), port: port, txt: txt,
                addresses: found?.addresses ?? [])
        } catch {
            return try ServiceRecords(
                instance: chosen, type: type, hostLabel: ServiceAdvertiser.defaultHostLabel(), port: port, txt: txt,
                addresses: found?.addresses ?? [])
        }
    }

    /// Runs the registration's thread: registers, reports the chosen name (or the failure) through
    /// the continuation, then keeps the reference until the session is cancelled.
    private func register(
        session: SystemDNSServiceSession, instance: ServiceInstanceName, type: ServiceType, port: UInt16, txt: TXTRecord,
        interfaceIndex: UInt32
    ) async -> Result<String, ServiceDiscoveryError> {
        let library = self.library
        let regtype = SystemServiceBrowsing.registrationType(type)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<String, ServiceDiscoveryError>, Never>) in
            let code = SystemDNSServiceSession.startThread { [self] in
                let box = RegistrationBox()
                var reported = false
                func report(_ result: Result<String, ServiceDiscoveryError>) {
                    guard !reported else { return }
                    reported = true
                    continuation.resume(returning: result)
                }
                do throws(ServiceDiscoveryError) {
                    let wire = txt.wire
                    _ = try session.start("DNSServiceRegister", context: box) { ref, context in
                        wire.withUnsafeBytes { bytes in
                            library.register(
                                ref, 0, interfaceIndex, instance.value, regtype, nil, nil, port.bigEndian, UInt16(bytes.count),
                                bytes.baseAddress, registerCallback, context)
                        }
                    }
                    let outcome = session.run(until: .now + Self.registrationTimeout) { box.result != nil }
                    switch outcome {
                    case .done: report(box.result!)
                    case .timedOut: report(.failure(.systemDaemonUnavailable("the DNS-SD daemon did not confirm the registration")))
                    case .cancelled: report(.failure(.cancelled))
                    case .failed(let error): report(.failure(error))
                    }
                    if case .success = box.result, outcome == .done {
                        // Keep the registration (and answer the daemon) until stop() cancels.
                        _ = session.run(until: nil) { false }
                    }
                } catch {
                    report(.failure(error))
                }
                session.closeAll()
                markFinished()
            }
            if code != 0 {
                session.closeAll()
                markFinished()
                continuation.resume(returning: .failure(.systemDiscoveryFailed(operation: "pthread_create", code: code)))
            }
        }
        return result
    }

    /// Deallocates the registration (the daemon withdraws it) and waits for its thread to end.
    /// Safe to call more than once, and before or after a failed `start()`.
    func stop() async {
        let session = state.withLock { state in
            defer { state = (.stopped, nil) }
            return state.phase == .started ? state.session : nil
        }
        guard let session else { return }
        session.cancel()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = finished.withLock { state in
                if !state.done { state.waiters.append(continuation) }
                return state.done
            }
            if done { continuation.resume() }
        }
    }

    private func markFinished() {
        let waiters = finished.withLock { state in
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// The registration callback's result; confined to the session's thread.
private final class RegistrationBox {
    var result: Result<String, ServiceDiscoveryError>?
}

private let registerCallback: SFDNSServiceRegisterReply = { _, _, error, name, _, _, context in
    guard let context else { return }
    let box = Unmanaged<RegistrationBox>.fromOpaque(context).takeUnretainedValue()
    guard box.result == nil else { return }
    if error == SFDNSServiceErrNoError, let name {
        box.result = .success(String(cString: name))
    } else if error == SFDNSServiceErrNameConflict {
        box.result = .failure(.nameConflict(name.map { String(cString: $0) } ?? ""))
    } else {
        box.result = .failure(.systemDiscoveryFailed(operation: "DNSServiceRegister", code: error))
    }
}
