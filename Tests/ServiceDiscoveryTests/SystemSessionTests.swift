import CDNSServiceShim
import Foundation
import Synchronization
import Testing

@testable import ServiceDiscovery

/// The `.system` backend's event loop against a fake DNS-SD library (no daemon, no network): each
/// operation's "socket" is a pipe, which never becomes readable unless a test scripts replies, so
/// only the timeout or cancellation can end an operation; scripted, the fake reports many instance
/// names and counts the operations open. Every reference made must be deallocated, exactly once.
@Suite("System DNS-SD session: timeouts, cancellation, deallocation, caps (fake library)", .serialized)
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

    /// 1,000 names from the daemon: "Real" at 900 resolves; every seventh name's resolve cannot
    /// start, every fiftieth (from 1) never answers, the others answer an error.
    static func manyNames() -> FakeDNSService.Script {
        var names = (0..<1000).map { "Fake \($0)" }
        names[900] = "Real"
        return FakeDNSService.Script(
            names: names, failingStarts: Set(stride(from: 0, to: 1000, by: 7).map { "Fake \($0)" }),
            silent: Set(stride(from: 1, to: 1000, by: 50).map { "Fake \($0)" }), resolvable: "Real")
    }

    /// The system backend started a resolve for every name the daemon reported, with no cap, and
    /// one that could not start failed the whole browse.
    @Test("1,000 instance names: at most 16 resolves open at once, 512 names kept, those that fail skipped, the real one found")
    func manyInstanceNames() async throws {
        FakeDNSService.reset(startCode: 0, script: Self.manyNames())
        let result = try await SystemServiceBrowsing.browseCounting(
            type: .secureChannel, interfaceIndex: 0, timeout: .seconds(3), library: FakeDNSService.library,
            stalledResolveTimeout: .milliseconds(100))
        let real = try #require(result.instances.first, "the real instance was not found: \(FakeDNSService.counts)")
        #expect(result.instances.count == 1 && real.name == "Real" && real.port == FakeDNSService.resolvablePort)
        #expect(real.addresses == [IPAddress("192.0.2.7")!] && real.txt.dictionary == ["v": "1"])
        let counts = FakeDNSService.counts
        // The browse, the resolves, and the real host's two address queries.
        #expect(counts.peakResolves <= SystemServiceBrowsing.maximumResolves, "\(counts)")
        #expect(counts.peak <= 1 + SystemServiceBrowsing.maximumResolves + 2, "\(counts)")
        // Only the names kept were tried: the 488 oldest gave their place, and were never resolved.
        #expect(counts.resolvesStarted + counts.resolvesRefused <= SystemServiceBrowsing.maximumCandidates, "\(counts)")
        #expect(counts.resolvesRefused > 0, "\(counts)")
        #expect(result.skipped >= 1000 - SystemServiceBrowsing.maximumCandidates + counts.resolvesRefused)
        #expect(counts.created == counts.deallocated && counts.open.isEmpty, "\(counts)")
    }

    @Test("resolving one name ignores the other names the daemon reports")
    func resolveIgnoresOtherNames() async throws {
        FakeDNSService.reset(startCode: 0, script: Self.manyNames())
        let real = try await SystemServiceBrowsing.resolve(
            instanceName: "Real", type: .secureChannel, interfaceIndex: 0, timeout: .seconds(5), library: FakeDNSService.library)
        #expect(real.name == "Real" && real.addresses == [IPAddress("192.0.2.7")!])
        let counts = FakeDNSService.counts
        #expect(counts.resolvesStarted == 1 && counts.resolvesRefused == 0 && counts.peakResolves == 1, "\(counts)")
        #expect(counts.created == counts.deallocated && counts.open.isEmpty, "\(counts)")
    }

    @Test("a browse whose resolves all fail to start fails with the error, as when the daemon refuses everything")
    func nothingStarts() async throws {
        var script = FakeDNSService.Script(names: ["A", "B", "C"])
        script.failingStarts = ["A", "B", "C"]
        FakeDNSService.reset(startCode: 0, script: script)
        await #expect(throws: ServiceDiscoveryError.systemDiscoveryFailed(operation: "DNSServiceResolve", code: Int32(SFDNSServiceErrBadParam))) {
            try await SystemServiceBrowsing.browse(type: .secureChannel, interfaceIndex: 0, timeout: .milliseconds(300), library: FakeDNSService.library)
        }
        let counts = FakeDNSService.counts
        #expect(counts.resolvesRefused == 3 && counts.created == counts.deallocated && counts.open.isEmpty, "\(counts)")
    }
}

/// A fake DNS-SD library: references are pipes, counted when made and deallocated. Without a
/// `Script` (or with no names in it) nothing is ever readable. With one, the browse reports the
/// script's names, all in one batch, the first time it is processed; a resolve answers (once) with
/// `resolvableHost` for `Script.resolvable` and with an error for other names, except the silent
/// ones, which never answer; the A query of `resolvableHost` answers `resolvableAddress`, other
/// queries never. A reference has something to report when its pipe holds a byte.
enum FakeDNSService {
    struct Counts: Sendable, CustomStringConvertible {
        var created = 0, deallocated = 0
        var open = Set<Int32>()
        var startCode: Int32 = 0
        /// The most references open at once, the resolves open now and the most at once.
        var peak = 0, openResolves = 0, peakResolves = 0
        /// Resolves started, and those refused (`Script.failingStarts`).
        var resolvesStarted = 0, resolvesRefused = 0
        var description: String {
            "created \(created), deallocated \(deallocated), open \(open.sorted()), peak \(peak), peak resolves \(peakResolves), "
                + "resolves started \(resolvesStarted), refused \(resolvesRefused)"
        }
    }

    /// What the fake daemon reports.
    struct Script: Sendable {
        /// The instance names the browse reports.
        var names = [String]()
        /// Names whose `DNSServiceResolve` fails to start (kDNSServiceErr_BadParam).
        var failingStarts = Set<String>()
        /// Names whose resolve never answers.
        var silent = Set<String>()
        /// The one name that resolves (to `resolvableHost`, port `resolvablePort`, TXT `v=1`).
        var resolvable: String?
    }

    static let resolvableHost = "real-host.local."
    static let resolvablePort: UInt16 = 4433
    static let resolvableAddress: [UInt8] = [192, 0, 2, 7]

    /// One operation made: what it is, its reply callback and context. Unchecked Sendable: C
    /// function pointers and a raw pointer, only called on the session's thread.
    enum Operation: @unchecked Sendable {
        case browse(SFDNSServiceBrowseReply?, UnsafeMutableRawPointer?)
        case resolve(String, SFDNSServiceResolveReply?, UnsafeMutableRawPointer?)
        case query(String, UInt16, SFDNSServiceQueryRecordReply?, UnsafeMutableRawPointer?)
        case other

        var resolveName: String? {
            if case .resolve(let name, _, _) = self { return name }
            return nil
        }
    }

    struct World: Sendable {
        var counts = Counts()
        var script = Script()
        /// The operations open, by their pipe's read end.
        var operations = [Int32: Operation]()

        /// Whether `operation` has something to report once started.
        func answers(_ operation: Operation) -> Bool {
            guard !script.names.isEmpty else { return false }
            switch operation {
            case .browse: return true
            case .resolve(let name, _, _): return !script.silent.contains(name)
            case .query(let host, let type, _, _): return type == UInt16(SFDNSServiceTypeA) && host.lowercased() == FakeDNSService.resolvableHost
            case .other: return false
            }
        }
    }

    static let world = Mutex(World())
    static var counts: Counts { world.withLock { $0.counts } }

    static func reset(startCode: Int32, script: Script = Script()) {
        world.withLock { $0 = World(counts: Counts(startCode: startCode), script: script) }
    }

    /// Makes a reference whose socket is the read end of a new pipe (the write end is kept open in
    /// the pointer's upper bits), or returns the configured error; writes a byte into the pipe
    /// when the operation has something to report.
    static func make(_ ref: UnsafeMutablePointer<SFDNSServiceRef?>?, _ operation: Operation = .other) -> SFDNSServiceErrorType {
        let (code, answers) = world.withLock { world -> (Int32, Bool) in
            if let name = operation.resolveName, world.script.failingStarts.contains(name) {
                world.counts.resolvesRefused += 1
                return (Int32(SFDNSServiceErrBadParam), false)
            }
            return (world.counts.startCode, world.answers(operation))
        }
        guard code == 0 else { return code }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return Int32(SFDNSServiceErrUnknown) }
        if answers {
            var byte: UInt8 = 1
            _ = write(fds[1], &byte, 1)
        }
        ref?.pointee = OpaquePointer(bitPattern: (Int(fds[1]) << 16) | Int(fds[0]))
        let readEnd = fds[0]
        world.withLock { world in
            world.operations[readEnd] = operation
            world.counts.created += 1
            world.counts.open.insert(readEnd)
            world.counts.peak = max(world.counts.peak, world.counts.open.count)
            if operation.resolveName != nil {
                world.counts.resolvesStarted += 1
                world.counts.openResolves += 1
                world.counts.peakResolves = max(world.counts.peakResolves, world.counts.openResolves)
            }
        }
        return 0
    }

    static func descriptors(_ ref: SFDNSServiceRef?) -> (read: Int32, write: Int32) {
        let bits = Int(bitPattern: ref)
        return (Int32(bits & 0xFFFF), Int32(bits >> 16))
    }

    /// Delivers what `ref` has to report (see the type's description), called when its pipe is
    /// readable; the reply callbacks run without the lock held (they start and finish operations).
    static func process(_ ref: SFDNSServiceRef?) -> SFDNSServiceErrorType {
        let readEnd = descriptors(ref).read
        var byte: UInt8 = 0
        _ = read(readEnd, &byte, 1)
        let (found, script) = world.withLock { ($0.operations[readEnd], $0.script) }
        guard let operation = found else { return Int32(SFDNSServiceErrUnknown) }
        switch operation {
        case .browse(let callback?, let context):
            for name in script.names {
                name.withCString { name in callback(ref, UInt32(SFDNSServiceFlagsAdd), 1, 0, name, nil, nil, context) }
            }
        case .resolve(let name, let callback?, let context):
            guard name == script.resolvable else {
                callback(ref, 0, 1, Int32(SFDNSServiceErrNoSuchName), nil, nil, 0, 0, nil, context)
                break
            }
            let txt: [UInt8] = [3] + Array("v=1".utf8)
            txt.withUnsafeBufferPointer { txtBytes in
                resolvableHost.withCString { host in
                    callback(ref, 0, 1, 0, nil, host, resolvablePort.bigEndian, UInt16(txtBytes.count), txtBytes.baseAddress, context)
                }
            }
        case .query(_, let type, let callback?, let context):
            resolvableAddress.withUnsafeBytes { bytes in
                callback(ref, UInt32(SFDNSServiceFlagsAdd), 1, 0, nil, type, UInt16(SFDNSServiceClassIN), UInt16(bytes.count), bytes.baseAddress, 120, context)
            }
        case .browse, .resolve, .query, .other:
            break
        }
        return 0
    }

    static let library = SystemDNSServiceLibrary(
        register: { ref, _, _, _, _, _, _, _, _, _, _, _ in FakeDNSService.make(ref) },
        browse: { ref, _, _, _, _, callback, context in FakeDNSService.make(ref, .browse(callback, context)) },
        resolve: { ref, _, _, name, _, _, callback, context in
            FakeDNSService.make(ref, .resolve(name.map { String(cString: $0) } ?? "", callback, context))
        },
        queryRecord: { ref, _, _, name, type, _, callback, context in
            FakeDNSService.make(ref, .query(name.map { String(cString: $0) } ?? "", type, callback, context))
        },
        socketDescriptor: { ref in FakeDNSService.descriptors(ref).read },
        processResult: { ref in FakeDNSService.process(ref) },
        deallocate: { ref in
            let (read, write) = FakeDNSService.descriptors(ref)
            close(read)
            close(write)
            FakeDNSService.world.withLock {
                $0.counts.deallocated += 1
                $0.counts.open.remove(read)
                if $0.operations.removeValue(forKey: read)?.resolveName != nil { $0.counts.openResolves -= 1 }
            }
        })
}
