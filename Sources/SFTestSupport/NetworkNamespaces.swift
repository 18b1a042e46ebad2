import Foundation
import Synchronization

/// Two network namespaces joined by a veth pair, made for one test and always removed.
///
/// Names: `sfdisc-<test pid>-<random>-a` and `-b`. The veth ends `sfdA` / `sfdB` are created
/// directly inside the namespaces (never on the host), addressed 192.0.2.1/24 and 192.0.2.2/24
/// (TEST-NET-1, documentation only), with `lo` up and a route for 224.0.0.0/4 on the veth. Every
/// multicast packet of a test stays on that veth. `remove()` (called by the test's `defer`, and by
/// `deinit`) ends the processes started inside and deletes both namespaces, which destroys the
/// veth pair. Namespaces left by a test process that died are deleted by the next run
/// (`removeStale`: the pid in the name no longer exists).
public final class NamespacePair: Sendable {
    /// The prefix of every namespace name this helper makes.
    public static let prefix = "sfdisc-"
    /// The two namespace names.
    public let a: String, b: String
    /// The veth end inside `a` and inside `b`.
    public let interfaceA = "sfdA", interfaceB = "sfdB"
    /// The addresses of `interfaceA` and `interfaceB` (TEST-NET-1, /24).
    public let addressA = "192.0.2.1", addressB = "192.0.2.2"
    /// The processes started inside, and whether `remove()` ran.
    private let started = Mutex((processes: [BackgroundProcess](), removed: false))

    /// Nil when namespaces can be made here; otherwise why not (shown as the skip reason).
    public static let unavailableReason: String? = {
        guard getuid() == 0 else { return "network namespaces need root (ip netns add); discovery network tests skipped" }
        guard TestSupport.which("ip") != nil else { return "iproute2 (ip) is not installed; discovery network tests skipped" }
        let probe = "\(prefix)\(getpid())-check"
        guard let result = try? TestSupport.run("ip", ["netns", "add", probe]), result.status == 0 else {
            return "cannot create a network namespace (ip netns add failed); discovery network tests skipped"
        }
        _ = try? TestSupport.run("ip", ["netns", "del", probe])
        return nil
    }()

    /// True when namespaces can be made here.
    public static var available: Bool { unavailableReason == nil }

    /// A failed `ip` command while setting up (the namespaces made so far are removed).
    public struct SetupError: Error, CustomStringConvertible {
        /// The command and its error output.
        public let description: String
    }

    /// Creates both namespaces and the veth pair (removing stale ones first).
    public init() throws {
        Self.removeStale()
        let tag = "\(Self.prefix)\(getpid())-\(UInt32.random(in: 0..<UInt32.max))"
        a = "\(tag)-a"
        b = "\(tag)-b"
        do {
            try Self.ip(["netns", "add", a])
            try Self.ip(["netns", "add", b])
            try Self.ip(["link", "add", interfaceA, "netns", a, "type", "veth", "peer", "name", interfaceB, "netns", b])
            for (ns, interface, address) in [(a, interfaceA, addressA), (b, interfaceB, addressB)] {
                try Self.ip(["-n", ns, "link", "set", "lo", "up"])
                try Self.ip(["-n", ns, "addr", "add", "\(address)/24", "dev", interface])
                try Self.ip(["-n", ns, "link", "set", interface, "up"])
                try Self.ip(["-n", ns, "route", "add", "224.0.0.0/4", "dev", interface])
            }
        } catch {
            remove()
            throw error
        }
    }

    deinit { remove() }

    private static func ip(_ arguments: [String]) throws {
        let result = try TestSupport.run("ip", arguments)
        guard result.status == 0 else {
            throw SetupError(description: "ip \(arguments.joined(separator: " ")) failed: \(result.stderrText)")
        }
    }

    /// Runs a command inside namespace `ns` and waits for it.
    public func run(in ns: String, _ command: [String]) throws -> ProcessResult {
        try TestSupport.run("ip", ["netns", "exec", ns] + command)
    }

    /// Starts a long-running command inside namespace `ns`; it is ended by `remove()` at the latest.
    public func spawn(in ns: String, _ command: [String]) throws -> BackgroundProcess {
        let process = try BackgroundProcess(["ip", "netns", "exec", ns] + command)
        started.withLock { $0.processes.append(process) }
        return process
    }

    /// Ends the processes started inside and deletes both namespaces. Idempotent.
    public func remove() {
        let (toStop, first) = started.withLock { state -> ([BackgroundProcess], Bool) in
            defer { state.removed = true }
            return (state.processes, !state.removed)
        }
        guard first else { return }
        for process in toStop { process.kill() }
        for ns in [a, b] { _ = try? TestSupport.run("ip", ["netns", "del", ns]) }
    }

    /// Deletes `sfdisc-<pid>-…` namespaces whose creating process no longer exists.
    public static func removeStale() {
        guard let list = try? TestSupport.run("ip", ["netns", "list"]) else { return }
        for line in list.stdoutText.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            guard name.hasPrefix(prefix) else { continue }
            let pid = name.dropFirst(prefix.count).prefix { $0.isNumber }
            guard let pid = Int32(pid), pid != getpid(), kill(pid, 0) != 0 else { continue }
            _ = try? TestSupport.run("ip", ["netns", "del", name])
        }
    }

    /// True when a namespace of this pair still exists (for the cleanup test).
    public static func exists(_ name: String) -> Bool {
        FileManager.default.fileExists(atPath: "/run/netns/\(name)")
    }
}

/// A child process whose standard output is collected line by line while it runs. Unchecked
/// Sendable: `Process` and `Pipe` are not Sendable, but are only set up in `init` and then used
/// through their own thread-safe calls; what the process writes is behind a `Mutex`.
public final class BackgroundProcess: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    /// What the process wrote so far: complete output lines, the unfinished one, standard error.
    private let written = Mutex((lines: [String](), partial: Data(), errorText: Data()))

    /// Starts `command` (its first element looked up on PATH) with piped standard streams.
    public init(_ command: [String]) throws {
        process.executableURL = URL(fileURLWithPath: TestSupport.which(command[0]) ?? command[0])
        process.arguments = Array(command.dropFirst())
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        // At the end of a pipe each handler removes itself: a read source at end of file fires
        // again and again, and one still registered when the pipe's descriptor is closed (as this
        // object goes) can meet that number reused by another descriptor inside libdispatch's
        // epoll loop, which has crashed a test run.
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil }
            guard let self else { return }
            self.written.withLock { written in
                written.partial.append(data)
                while let newline = written.partial.firstIndex(of: 0x0A) {
                    written.lines.append(String(decoding: written.partial[written.partial.startIndex..<newline], as: UTF8.self))
                    written.partial = Data(written.partial[(newline + 1)...])
                }
            }
        }
        errors.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil }
            self?.written.withLock { $0.errorText.append(data) }
        }
        signal(SIGPIPE, SIG_IGN)
        try process.run()
    }

    /// Everything written to standard output so far, the unfinished last line included.
    public var standardOutput: String {
        written.withLock { ($0.lines.map { $0 + "\n" }.joined()) + String(decoding: $0.partial, as: UTF8.self) }
    }

    /// The complete lines written to standard output so far.
    public var outputLines: [String] { written.withLock { $0.lines } }
    /// Everything written to standard error so far.
    public var standardError: String { written.withLock { String(decoding: $0.errorText, as: UTF8.self) } }
    /// True while the process runs.
    public var isRunning: Bool { process.isRunning }

    /// The process's id (the command's own: an `exec` wrapper such as `prlimit` becomes it).
    public var processIdentifier: Int32 { process.processIdentifier }

    /// The first output line that decodes as a JSON object with `event` == `event`, waiting up to
    /// `timeout` seconds.
    public func waitForEvent(_ event: String, timeout: TimeInterval = 300) -> [String: Any]? {
        let deadline = Date().addingTimeInterval(timeout)
        func find() -> [String: Any]? {
            outputLines.lazy.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .first { $0["event"] as? String == event }
        }
        while Date() < deadline {
            if let found = find() { return found }
            if !process.isRunning {
                Thread.sleep(forTimeInterval: 0.3)  // let the reader drain the pipe
                return find()
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return nil
    }

    /// Closes standard input (the probe and peers then stop cleanly) and waits up to `timeout`.
    public func finish(timeout: TimeInterval = 30) {
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        kill()
        Thread.sleep(forTimeInterval: 0.2)
    }

    /// Writes `data` to the process's standard input (ignored once it has exited).
    public func write(_ data: Data) {
        try? input.fileHandleForWriting.write(contentsOf: data)
    }

    /// Closes the process's standard input.
    public func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Waits up to `timeout` seconds for `condition` on the process, polling; true when it held.
    public func wait(timeout: TimeInterval = 300, until condition: (BackgroundProcess) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(self) { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return condition(self)
    }

    /// Waits up to `timeout` seconds for the process to exit and returns its status (nil if it
    /// still runs; the caller's `kill()` ends it).
    public func waitForExit(timeout: TimeInterval = 300) -> Int32? {
        guard wait(timeout: timeout, until: { !$0.isRunning }) else { return nil }
        process.waitUntilExit()
        Thread.sleep(forTimeInterval: 0.2)  // let the readers drain the pipes
        return process.terminationStatus
    }

    /// Terminates the process if it still runs: SIGTERM, then SIGKILL when it has not exited
    /// within `grace` seconds (a process stuck in its own shutdown never holds a test).
    public func kill(grace: TimeInterval = 10) {
        try? input.fileHandleForWriting.close()
        guard process.isRunning else { return }
        process.terminate()
        if !wait(timeout: grace, until: { !$0.isRunning }) {
            _ = Foundation.kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }
}

