import CDNSServiceShim
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The DNS-SD operations of one browse, resolve or registration, run on a thread of their own
/// (never on Swift's cooperative pool: `DNSServiceProcessResult` blocks). Every `DNSServiceRef` is
/// created, processed and deallocated on that thread, so reply callbacks run there too; only
/// `cancel()` is called from elsewhere, and it only sets a flag and writes to a wake-up pipe (never
/// once the session is closed: the pipe's descriptor numbers may then belong to another file).
///
/// `DNSServiceProcessResult` is called only when the reference's socket is readable (Avahi's
/// compatibility library deadlocks otherwise). A reference a callback wants gone is deallocated
/// after `DNSServiceProcessResult` returns, with the context object it was given. Unchecked
/// Sendable: the mutable state is confined to the session's thread, and what `cancel()` touches is
/// behind a `Mutex`.
final class SystemDNSServiceSession: @unchecked Sendable {
    /// Why `run` returned.
    enum Outcome: Equatable {
        case done, timedOut, cancelled
        case failed(ServiceDiscoveryError)
    }

    let library: SystemDNSServiceLibrary
    /// Set by `cancel()` and `closeAll()`; the pipe is written and closed under this lock.
    private let signal = Mutex((cancelled: false, closed: false))
    private let wakeRead: Int32, wakeWrite: Int32
    // Thread-confined from here on.
    private var operations = [(ref: SFDNSServiceRef, context: Unmanaged<AnyObject>)]()
    private var doomed = [SFDNSServiceRef]()
    /// A failure a reply callback reported; ends `run`.
    var failure: ServiceDiscoveryError?

    init(library: SystemDNSServiceLibrary) throws(ServiceDiscoveryError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw .systemDiscoveryFailed(operation: "pipe", code: errno) }
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        self.library = library
        self.wakeRead = fds[0]
        self.wakeWrite = fds[1]
    }

    /// Runs `body` on a new thread with a new session, closes the session (deallocating every
    /// reference) and returns what `body` returned. Task cancellation cancels the session.
    static func perform<T: Sendable>(
        library: SystemDNSServiceLibrary, _ body: @escaping @Sendable (SystemDNSServiceSession) -> Result<T, ServiceDiscoveryError>
    ) async throws(ServiceDiscoveryError) -> T {
        let session = try SystemDNSServiceSession(library: library)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, ServiceDiscoveryError>, Never>) in
                let code = startThread {
                    let result = body(session)
                    session.closeAll()
                    continuation.resume(returning: result)
                }
                if code != 0 {
                    session.closeAll()
                    continuation.resume(returning: .failure(.systemDiscoveryFailed(operation: "pthread_create", code: code)))
                }
            }
        } onCancel: {
            session.cancel()
        }
        return try result.get()
    }

    /// Starts an operation: `start` receives the context pointer to pass to the C call and returns
    /// its error code; on success the reference is kept (with `context`) until `finish` or `close`.
    func start(
        _ operation: String, context: AnyObject, _ start: (UnsafeMutablePointer<SFDNSServiceRef?>, UnsafeMutableRawPointer) -> SFDNSServiceErrorType
    ) throws(ServiceDiscoveryError) -> SFDNSServiceRef {
        let retained = Unmanaged.passRetained(context)
        var ref: SFDNSServiceRef?
        let code = start(&ref, retained.toOpaque())
        guard code == SFDNSServiceErrNoError, let ref else {
            retained.release()
            throw SystemDNSServiceLibrary.startError(operation, code)
        }
        operations.append((ref, retained))
        return ref
    }

    /// Deallocates `ref` once the current `DNSServiceProcessResult` has returned (at once outside one).
    func finish(_ ref: SFDNSServiceRef) {
        doomed.append(ref)
    }

    private func deallocateDoomed() {
        for ref in doomed {
            guard let index = operations.firstIndex(where: { $0.ref == ref }) else { continue }
            let operation = operations.remove(at: index)
            library.deallocate(operation.ref)
            operation.context.release()
        }
        doomed.removeAll()
    }

    /// Processes replies until `done()` holds, `deadline` passes, the session is cancelled or a
    /// call fails. `done` is checked before waiting and after every batch of replies.
    func run(until deadline: ContinuousClock.Instant?, done: () -> Bool) -> Outcome {
        while true {
            deallocateDoomed()
            if let failure { return .failed(failure) }
            if isCancelled { return .cancelled }
            if done() { return .done }
            var timeout: Int32 = -1
            if let deadline {
                let remaining = deadline - .now
                if remaining <= .zero { return .timedOut }
                let milliseconds = remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000
                timeout = Int32(clamping: max(1, milliseconds))
            }
            let refs = operations.map(\.ref)
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            for ref in refs { fds.append(pollfd(fd: library.socketDescriptor(ref), events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                return .failed(.systemDiscoveryFailed(operation: "poll", code: errno))
            }
            for (index, ref) in refs.enumerated() where fds[index + 1].revents != 0 {
                guard !doomed.contains(ref) else { continue }
                let code = library.processResult(ref)
                if code != SFDNSServiceErrNoError {
                    return .failed(.systemDaemonUnavailable("DNSServiceProcessResult failed with DNS-SD error \(code)"))
                }
            }
        }
    }

    /// Ends `run` from any thread; after `closeAll()` it only records the cancellation.
    func cancel() {
        signal.withLock { signal in
            signal.cancelled = true
            guard !signal.closed else { return }
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    /// Whether `cancel()` was called.
    var isCancelled: Bool { signal.withLock { $0.cancelled } }

    /// Deallocates every reference and closes the pipe. Called once, on the session's thread.
    func closeAll() {
        doomed = operations.map(\.ref)
        deallocateDoomed()
        signal.withLock { signal in
            signal.closed = true
            close(wakeRead)
            close(wakeWrite)
        }
    }
}

extension SystemDNSServiceSession {
    /// Runs `body` on a new detached thread (outside Swift's cooperative pool); returns 0, or
    /// `pthread_create`'s error code when no thread could be made (then `body` never runs).
    static func startThread(_ body: @escaping @Sendable () -> Void) -> Int32 {
        let argument = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        let entry: @convention(c) (UnsafeMutableRawPointer) -> UnsafeMutableRawPointer? = { argument in
            Unmanaged<ThreadBody>.fromOpaque(argument).takeRetainedValue().body()
            return nil
        }
        #else
        var thread = pthread_t()
        let entry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { argument in
            Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue().body()
            return nil
        }
        #endif
        let code = pthread_create(&thread, nil, entry, argument)
        guard code == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(argument).release()
            return code
        }
        #if canImport(Darwin)
        if let thread { pthread_detach(thread) }
        #else
        pthread_detach(thread)
        #endif
        return 0
    }
}

private final class ThreadBody {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
