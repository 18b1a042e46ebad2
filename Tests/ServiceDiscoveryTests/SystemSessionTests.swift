import CDNSServiceShim
import Foundation
import Synchronization
import Testing

@testable import ServiceDiscovery

/// The `.system` backend's event loop against a fake DNS-SD library (no daemon, no network): each
/// operation's "socket" is a pipe that never becomes readable, so only the timeout or cancellation
/// can end an operation. Every reference made must be deallocated, exactly once.
@Suite("System DNS-SD session: timeouts, cancellation, deallocation (fake library)", .serialized)
struct SystemSessionTests {
    @Test("a browse ends at its timeout with nothing found, and deallocates every reference")
    func timeout() async throws {
        FakeDNSService.reset(startCode: 0)
        let found = try await SystemServiceBrowsing.browse(
            type: .secureChannel, interfaceIndex: 0, timeout: .milliseconds(200), library: FakeDNSService.library)
        #expect(found.isEmpty)
        let counts = FakeDNSService.counts
        #expect(counts.created == 1 && counts.deallocated == 1 && counts.open.isEmpty, "\(counts)")
    }

    @Test("cancelling the task ends a resolve with .cancelled and deallocates every reference")
    func cancellation() async throws {
        FakeDNSService.reset(startCode: 0)
        let task = Task {
            try await SystemServiceBrowsing.resolve(
                instanceName: "Nobody", type: .secureChannel, interfaceIndex: 0, timeout: .seconds(600), library: FakeDNSService.library)
        }
        // Wait until both operations (browse and resolve) exist, then cancel.
        while FakeDNSService.counts.created < 2 { try await Task.sleep(for: .milliseconds(10)) }
        task.cancel()
        await #expect(throws: ServiceDiscoveryError.cancelled) { try await task.value }
        let counts = FakeDNSService.counts
        #expect(counts.created == 2 && counts.deallocated == 2 && counts.open.isEmpty, "\(counts)")
    }

    @Test("a daemon that is not running is systemDaemonUnavailable; another error code is systemDiscoveryFailed")
    func startErrors() async throws {
        FakeDNSService.reset(startCode: Int32(SFDNSServiceErrServiceNotRunning))
        await #expect {
            try await SystemServiceBrowsing.browse(type: .secureChannel, interfaceIndex: 0, timeout: .seconds(5), library: FakeDNSService.library)
        } throws: { error in
            guard case .systemDaemonUnavailable = error as? ServiceDiscoveryError else { return false }
            return true
        }
        FakeDNSService.reset(startCode: Int32(SFDNSServiceErrBadParam))
        let registration = SystemServiceRegistration(library: FakeDNSService.library)
        await #expect(throws: ServiceDiscoveryError.systemDiscoveryFailed(operation: "DNSServiceRegister", code: Int32(SFDNSServiceErrBadParam))) {
            try await registration.start(instance: try ServiceInstanceName("X"), type: .secureChannel, port: 1, txt: TXTRecord(), interfaceIndex: 0)
        }
        await registration.stop()
        #expect(FakeDNSService.counts.created == 0)
    }

    @Test("a registration the daemon never confirms is stopped by stop(), which deallocates it")
    func stopBeforeConfirmation() async throws {
        FakeDNSService.reset(startCode: 0)
        let registration = SystemServiceRegistration(library: FakeDNSService.library)
        let start = Task {
            try await registration.start(instance: try ServiceInstanceName("X"), type: .secureChannel, port: 1, txt: TXTRecord(), interfaceIndex: 0)
        }
        while FakeDNSService.counts.created < 1 { try await Task.sleep(for: .milliseconds(10)) }
        await registration.stop()
        await #expect(throws: ServiceDiscoveryError.cancelled) { try await start.value }
        // A second start is refused; stop is idempotent.
        await #expect(throws: ServiceDiscoveryError.self) {
            try await registration.start(instance: try ServiceInstanceName("X"), type: .secureChannel, port: 1, txt: TXTRecord(), interfaceIndex: 0)
        }
        await registration.stop()
        let counts = FakeDNSService.counts
        #expect(counts.created == 1 && counts.deallocated == 1 && counts.open.isEmpty, "\(counts)")
    }

    @Test("TXT wire form: built as length-prefixed strings, read back, overruns dropped")
    func txtWire() throws {
        let txt = try TXTRecord(["fp": "ab", "v": "1"])
        #expect(txt.wire == [5] + Array("fp=ab".utf8) + [3] + Array("v=1".utf8))
        #expect(TXTRecord(wire: txt.wire) == txt)
        #expect(TXTRecord().wire == [0])
        #expect(TXTRecord(wire: [3, 0x61, 0x3D, 0x62, 9, 0x63]).dictionary == ["a": "b"])
    }
}

/// A fake DNS-SD library: references are pipes (never readable), counted when made and deallocated.
enum FakeDNSService {
    struct Counts: Sendable, CustomStringConvertible {
        var created = 0, deallocated = 0
        var open = Set<Int32>()
        var startCode: Int32 = 0
        var description: String { "created \(created), deallocated \(deallocated), open \(open.sorted())" }
    }

    static let state = Mutex(Counts())
    static var counts: Counts { state.withLock { $0 } }

    static func reset(startCode: Int32) {
        state.withLock { $0 = Counts(startCode: startCode) }
    }

    /// Makes a reference whose socket is the read end of a new pipe (the write end is kept open in
    /// the pointer's upper bits, so it never becomes readable), or returns the configured error.
    static func make(_ ref: UnsafeMutablePointer<SFDNSServiceRef?>?) -> SFDNSServiceErrorType {
        let code = state.withLock { $0.startCode }
        guard code == 0 else { return code }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return Int32(SFDNSServiceErrUnknown) }
        ref?.pointee = OpaquePointer(bitPattern: (Int(fds[1]) << 16) | Int(fds[0]))
        state.withLock {
            $0.created += 1
            $0.open.insert(fds[0])
        }
        return 0
    }

    static func descriptors(_ ref: SFDNSServiceRef?) -> (read: Int32, write: Int32) {
        let bits = Int(bitPattern: ref)
        return (Int32(bits & 0xFFFF), Int32(bits >> 16))
    }

    static let library = SystemDNSServiceLibrary(
        register: { ref, _, _, _, _, _, _, _, _, _, _, _ in FakeDNSService.make(ref) },
        browse: { ref, _, _, _, _, _, _ in FakeDNSService.make(ref) },
        resolve: { ref, _, _, _, _, _, _, _ in FakeDNSService.make(ref) },
        queryRecord: { ref, _, _, _, _, _, _, _ in FakeDNSService.make(ref) },
        socketDescriptor: { ref in FakeDNSService.descriptors(ref).read },
        processResult: { _ in Int32(SFDNSServiceErrUnknown) },
        deallocate: { ref in
            let (read, write) = FakeDNSService.descriptors(ref)
            close(read)
            close(write)
            FakeDNSService.state.withLock {
                $0.deallocated += 1
                $0.open.remove(read)
            }
        })
}
