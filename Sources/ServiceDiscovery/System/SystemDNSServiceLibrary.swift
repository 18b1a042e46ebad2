import CDNSServiceShim
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The DNS-SD C API entry points of the system's daemon, resolved at run time with `dlsym`: from
/// libSystem on Apple platforms (`RTLD_DEFAULT`), from Avahi's compatibility library
/// `libdns_sd.so.1` on Linux. The package has no build-time dependency on either.
///
/// `DNSServiceQueryRecord` (A and AAAA) turns a host name into addresses: it exists in both
/// libraries, while Avahi's has no `DNSServiceGetAddrInfo`. Nothing of the `TXTRecord…` helpers is
/// needed: a TXT record's wire form is built and parsed by ``TXTRecord``. Unchecked Sendable: C
/// function pointers are not marked Sendable, but these are constants resolved once, and the
/// functions may be called from any thread.
struct SystemDNSServiceLibrary: @unchecked Sendable {
    let register: SFDNSServiceRegisterFunction
    let browse: SFDNSServiceBrowseFunction
    let resolve: SFDNSServiceResolveFunction
    let queryRecord: SFDNSServiceQueryRecordFunction
    let socketDescriptor: SFDNSServiceRefSockFDFunction
    let processResult: SFDNSServiceProcessResultFunction
    let deallocate: SFDNSServiceRefDeallocateFunction

    #if canImport(Darwin)
    /// Where the functions are looked up on this platform.
    static let defaultLibrary: String? = nil
    #else
    /// Where the functions are looked up on this platform: Avahi's compatibility library.
    static let defaultLibrary: String? = "libdns_sd.so.1"
    #endif

    /// The platform's library, loaded once per process.
    static let shared: Result<SystemDNSServiceLibrary, ServiceDiscoveryError> = load(defaultLibrary)

    /// Loads `library` (nil: the symbols already in the process, `RTLD_DEFAULT`) and resolves every
    /// entry point; `systemDiscoveryUnavailable` names what is missing. The handle is never
    /// closed: function pointers from it stay valid for the life of the process.
    static func load(_ library: String?) -> Result<SystemDNSServiceLibrary, ServiceDiscoveryError> {
        let handle: UnsafeMutableRawPointer?
        if let library {
            // Avahi's library otherwise prints, on first use, a warning meant for the developers of
            // programs that use it ("uses the Apple Bonjour compatibility layer"); a user's own
            // setting is kept.
            setenv("AVAHI_COMPAT_NOWARN", "1", 0)
            guard let opened = dlopen(library, RTLD_NOW | RTLD_LOCAL) else {
                let reason = dlerror().map { String(cString: $0) } ?? "dlopen failed"
                return .failure(
                    .systemDiscoveryUnavailable(
                        "cannot load \(library) (on Debian: apt-get install libavahi-compat-libdnssd1 avahi-daemon): \(reason)"))
            }
            handle = opened
        } else {
            #if canImport(Darwin)
            handle = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
            #else
            handle = nil  // RTLD_DEFAULT
            #endif
        }
        func symbol<T>(_ name: String, as type: T.Type) throws(ServiceDiscoveryError) -> T {
            guard let pointer = dlsym(handle, name) else {
                throw .systemDiscoveryUnavailable("\(library ?? "the process") has no \(name)")
            }
            return unsafeBitCast(pointer, to: type)
        }
        do throws(ServiceDiscoveryError) {
            return .success(
                SystemDNSServiceLibrary(
                    register: try symbol("DNSServiceRegister", as: SFDNSServiceRegisterFunction.self),
                    browse: try symbol("DNSServiceBrowse", as: SFDNSServiceBrowseFunction.self),
                    resolve: try symbol("DNSServiceResolve", as: SFDNSServiceResolveFunction.self),
                    queryRecord: try symbol("DNSServiceQueryRecord", as: SFDNSServiceQueryRecordFunction.self),
                    socketDescriptor: try symbol("DNSServiceRefSockFD", as: SFDNSServiceRefSockFDFunction.self),
                    processResult: try symbol("DNSServiceProcessResult", as: SFDNSServiceProcessResultFunction.self),
                    deallocate: try symbol("DNSServiceRefDeallocate", as: SFDNSServiceRefDeallocateFunction.self)))
        } catch {
            return .failure(error)
        }
    }

    /// Whether the daemon answers: a browse for `_sf-channel._tcp` on `interfaceIndex` starts (the
    /// daemon was reached) and is stopped at once, before any reply is processed. False when the
    /// daemon cannot be reached or has not let the browse start within `timeout`.
    func daemonAnswers(interfaceIndex: UInt32, within timeout: Duration) -> Bool {
        // The browse call itself can block: Avahi's library waits on D-Bus with libdbus' 25 s
        // reply timeout when the bus accepts but never answers. So the call runs on its own thread
        // and this waits for it no longer than `timeout`; a late thread finishes (and frees its
        // browse) on its own.
        let probe = DaemonProbe()
        let started = SystemDNSServiceSession.startThread { [self] in
            var ref: SFDNSServiceRef?
            let code = browse(&ref, 0, interfaceIndex, "_sf-channel._tcp", "local.", ignoreBrowseReply, nil)
            if let ref { deallocate(ref) }
            probe.finish(answered: code == SFDNSServiceErrNoError && ref != nil)
        }
        guard started == 0 else { return false }
        return probe.wait(timeout)
    }

    /// The error for a failed call that starts an operation: a daemon that cannot be reached
    /// (`kDNSServiceErr_ServiceNotRunning`; Avahi reports a missing daemon or bus as
    /// `kDNSServiceErr_Unknown`) is `systemDaemonUnavailable`, anything else `systemDiscoveryFailed`.
    static func startError(_ operation: String, _ code: SFDNSServiceErrorType) -> ServiceDiscoveryError {
        switch Int(code) {
        case Int(SFDNSServiceErrServiceNotRunning), Int(SFDNSServiceErrUnknown):
            .systemDaemonUnavailable("\(operation) failed with DNS-SD error \(code) (is mDNSResponder or avahi-daemon running?)")
        default:
            .systemDiscoveryFailed(operation: operation, code: code)
        }
    }
}

/// The outcome of one `daemonAnswers` probe, handed from the probing thread to the waiting one.
private final class DaemonProbe: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let answered = Mutex(false)

    func finish(answered value: Bool) {
        answered.withLock { $0 = value }
        done.signal()
    }

    /// Whether the daemon answered within `timeout`; false when the probe is still waiting.
    func wait(_ timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.boundedForDiscovery.components
        let nanoseconds = Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
        guard done.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else { return false }
        return answered.withLock { $0 }
    }
}

/// The reply handler of `daemonAnswers`' browse, which is stopped before any reply is processed.
private let ignoreBrowseReply: SFDNSServiceBrowseReply = { _, _, _, _, _, _, _, _ in }
