// SecureChannel over 127.0.0.1: XX handshakes per second, bulk throughput through one channel,
// and memory per idle established connection. Every loop is bounded in count and in time.
import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SecureChannel

let serverKey = Curve25519.KeyAgreement.PrivateKey()
let clientKey = Curve25519.KeyAgreement.PrivateKey()
let group = MultiThreadedEventLoopGroup.singleton  // one event loop per core (2 here)

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

/// Resident set size of this process in bytes (from /proc/self/statm).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// User and system CPU seconds this process has used so far (both ends of every connection).
func cpuSeconds() -> (user: Double, system: Double) {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return (seconds(usage.ru_utime), seconds(usage.ru_stime))
}

/// A server that takes every connection from `connections` and hands it to `serve`.
func startServer(configuration: SecureChannel.Configuration, serve: @escaping @Sendable (SecureChannel.Connection) async -> Void)
    async throws -> SecureChannel.Server
{
    let server = try await SecureChannel.Server.bind(
        host: "127.0.0.1", port: 0, staticKey: serverKey, peer: .anyAuthenticatedKey, configuration: configuration)
    Task {
        for await connection in server.connections { Task { await serve(connection) } }
    }
    return server
}

func connect(port: Int, configuration: SecureChannel.Configuration = .init()) async throws -> SecureChannel.Connection {
    try await SecureChannel.Client.connect(
        host: "127.0.0.1", port: port, staticKey: clientKey, peer: .pinned(serverKey.publicKey), configuration: configuration)
}

/// The single-core ceiling: swift-crypto sealing then opening full-size Noise transport messages
/// (65,519-byte plaintexts, 65,535 bytes sealed) in one thread, `totalBytes` each way, the same
/// primitive calls a channel makes, without networking, framing or copies of its own.
func ceiling(totalBytes: Int) {
    let plaintext = [UInt8](repeating: 0, count: 65_519)
    let count = totalBytes / plaintext.count
    func nonce(_ n: Int) -> [UInt8] { [0, 0, 0, 0] + withUnsafeBytes(of: UInt64(n).bigEndian) { Array($0) } }
    func report(_ name: String, _ what: String, _ seconds: Double) {
        let bytes = Double(count * plaintext.count)
        print(String(format: "swift-crypto %@ %@ of 65,519-byte messages, one thread: %.3f GiB in %.2f s = %.2f GB/s",
            name, what, bytes / 1_073_741_824, seconds, bytes / seconds / 1e9))
    }
    let key = SymmetricKey(size: .bits256)
    var start = now()
    var boxes = [ChaChaPoly.SealedBox]()
    var sink = 0
    for i in 0..<count {
        let box = try! ChaChaPoly.seal(plaintext, using: key, nonce: ChaChaPoly.Nonce(data: nonce(i)))
        if i < 2 { boxes.append(box) }
        sink &+= Int(box.tag.first!)
    }
    report("ChaChaPoly", "seal", now() - start)
    start = now()
    for _ in 0..<count { sink &+= try! ChaChaPoly.open(boxes[1], using: key).count }
    report("ChaChaPoly", "open", now() - start)
    start = now()
    var gcmBoxes = [AES.GCM.SealedBox]()
    for i in 0..<count {
        let box = try! AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(data: nonce(i)))
        if i < 2 { gcmBoxes.append(box) }
        sink &+= Int(box.tag.first!)
    }
    report("AES-256-GCM", "seal", now() - start)
    start = now()
    for _ in 0..<count { sink &+= try! AES.GCM.open(gcmBoxes[1], using: key).count }
    report("AES-256-GCM", "open", now() - start)
    if sink == 42 { print("") }
}

/// Full XX handshakes (TCP connect, 3 Noise messages, peer check) with `concurrency` clients in
/// flight, for `seconds` or `limit` handshakes, whichever comes first. Client and server share
/// this process and its two event loops.
func handshakes(seconds: Double, limit: Int, concurrency: Int) async throws {
    var configuration = SecureChannel.Configuration()
    configuration.maxHandshakesInProgress = 4 * concurrency
    let server = try await startServer(configuration: configuration) { connection in
        try? await connection.channel.channel.close()
    }
    // Warm-up (not counted).
    for _ in 0..<20 { try? await connect(port: server.port).channel.channel.close() }
    let done = NIOLockedValueBox(0)
    let failures = NIOLockedValueBox(0)
    let start = now()
    let deadline = start + seconds
    await withTaskGroup(of: Void.self) { tasks in
        for _ in 0..<concurrency {
            tasks.addTask {
                while now() < deadline {
                    guard done.withLockedValue({ count in
                        guard count < limit else { return false }
                        count += 1
                        return true
                    }) else { return }
                    do {
                        let connection = try await connect(port: server.port)
                        try? await connection.channel.channel.close()
                    } catch {
                        failures.withLockedValue { $0 += 1 }
                    }
                }
            }
        }
    }
    let elapsed = now() - start
    let count = done.withLockedValue { $0 } - failures.withLockedValue { $0 }
    print(String(format: "SecureChannel XX handshakes (Noise_XX_25519_ChaChaPoly_SHA256, TCP connect + 3 messages + close, client and server in one process on 2 event loops, %d in flight): %d in %.2f s = %.0f handshakes/s (failures %d)",
        concurrency, count, elapsed, Double(count) / elapsed, failures.withLockedValue { $0 }))
    await server.close()
}

/// Sends `totalBytes` as messages of `messageSize` through one channel to a server that counts
/// them and answers one byte when all have arrived; wall time from the first write to that answer.
func bulk(totalBytes: Int, messageSize: Int, seconds: Double, protocolName: String) async throws {
    let configuration = SecureChannel.Configuration(protocolName: try Noise.ProtocolName(parsing: protocolName))
    let serverLoop = NIOLockedValueBox("")
    let server = try await startServer(configuration: configuration) { connection in
        serverLoop.withLockedValue { $0 = "\(connection.channel.channel.eventLoop)" }
        try? await connection.executeThenClose { inbound, outbound in
            var received = 0
            for try await message in inbound {
                received += message.readableBytes
                if received >= totalBytes { break }
            }
            try await outbound.write(ByteBuffer(bytes: [1]))
        }
    }
    let connection = try await connect(port: server.port, configuration: configuration)
    let message = ByteBuffer(repeating: 0, count: messageSize)
    let deadline = now() + seconds
    let cpuBefore = cpuSeconds()
    let (sent, elapsed) = try await connection.executeThenClose { inbound, outbound in
        let start = now()
        var sent = 0
        while sent < totalBytes, now() < deadline {
            try await outbound.write(message)
            sent += messageSize
        }
        var iterator = inbound.makeAsyncIterator()
        if sent >= totalBytes { _ = try await iterator.next() }
        return (sent, now() - start)
    }
    let cpuAfter = cpuSeconds()
    print("event loops: client \(connection.channel.channel.eventLoop), server \(serverLoop.withLockedValue { $0 })")
    let (user, system) = (cpuAfter.user - cpuBefore.user, cpuAfter.system - cpuBefore.system)
    if sent < totalBytes {
        print(String(format: "SecureChannel bulk: time limit of %.0f s reached after %d bytes", seconds, sent))
    }
    let gib = Double(sent) / 1_073_741_824
    print(String(format: "SecureChannel bulk (%@, 1 channel, %d MiB messages): %.3f GiB in %.2f s = %.2f GB/s (%.2f GiB/s); CPU both ends %.2f s user + %.2f s system = %.2f CPU-s per GiB",
        protocolName, messageSize >> 20, gib, elapsed, Double(sent) / elapsed / 1e9, gib / elapsed, user, system, (user + system) / gib))
    await server.close()
}

/// Opens `count` connections and holds them idle; RSS growth of this process (which holds both
/// ends of every connection) divided by `count`.
func idle(count: Int, seconds: Double) async throws {
    let held = NIOLockedValueBox([SecureChannel.Connection]())
    var configuration = SecureChannel.Configuration()
    configuration.maxPendingConnections = count + 16
    let server = try await startServer(configuration: configuration) { connection in
        held.withLockedValue { $0.append(connection) }
    }
    // Warm-up: a few connections opened and closed so lazy allocations are not counted.
    for _ in 0..<20 { try? await connect(port: server.port).channel.channel.close() }
    try await Task.sleep(for: .milliseconds(200))
    let before = residentBytes()
    var clients = [SecureChannel.Connection]()
    clients.reserveCapacity(count)
    let deadline = now() + seconds
    while clients.count < count, now() < deadline {
        clients.append(try await connect(port: server.port))
    }
    for _ in 0..<500 where held.withLockedValue({ $0.count }) < clients.count + 20 && now() < deadline {
        try await Task.sleep(for: .milliseconds(10))
    }
    try await Task.sleep(for: .milliseconds(500))
    let after = residentBytes()
    let serverSide = held.withLockedValue { $0.count } - 20  // the 20 warm-up ends were held before `before`
    print(String(format: "SecureChannel idle connections: %d client + %d server ends held open in one process; RSS %.1f MiB -> %.1f MiB; %.1f KiB per connection (both ends), %.1f KiB per end",
        clients.count, serverSide, Double(before) / 1_048_576, Double(after) / 1_048_576,
        Double(after - before) / Double(clients.count) / 1024, Double(after - before) / Double(2 * clients.count) / 1024))
    for connection in clients { try? await connection.channel.channel.close() }
    await server.close()
}

/// An idle TCP connection to 127.0.0.1:`port` that never speaks (-1 when refused).
func idleSocket(port: Int) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    if result != 0 {
        close(fd)
        return -1
    }
    return fd
}

/// Issue 21's denial of service: an attacker holds `sockets` idle TCP connections to the server,
/// re-opening each one the server closes at once (`reopenAfter` 0), or all of them every
/// `reopenAfter` seconds (the 70-socket churn); meanwhile honest clients connect one after
/// another, each given 10 s, and the share served is reported.
func flood(sockets: Int, reopenAfter: Double, honestClients: Int) async throws {
    let server = try await startServer(configuration: .init()) { connection in
        _ = try? await connection.executeThenClose { inbound, outbound in
            for try await message in inbound { try await outbound.write(message) }
        }
    }
    let port = server.port
    let stop = NIOLockedValueBox(false)
    let opened = NIOLockedValueBox(0)
    let attacker = Thread {
        var held = [Int32](repeating: -1, count: sockets)
        var lastRound = 0.0
        while !stop.withLockedValue({ $0 }) {
            let round = reopenAfter > 0 && now() - lastRound >= reopenAfter
            if round { lastRound = now() }
            for index in held.indices {
                var closed = held[index] < 0
                if !closed && reopenAfter == 0 {
                    // Closed by the server? (a read that does not block: 0 is its FIN)
                    var byte: UInt8 = 0
                    closed = recv(held[index], &byte, 1, Int32(MSG_DONTWAIT)) == 0
                }
                if closed || round {
                    if held[index] >= 0 { close(held[index]) }
                    held[index] = idleSocket(port: port)
                    opened.withLockedValue { $0 += 1 }
                }
            }
            usleep(reopenAfter > 0 ? 100_000 : 1_000)
        }
        for fd in held where fd >= 0 { close(fd) }
    }
    attacker.start()
    try await Task.sleep(for: .seconds(1))  // the flood is in place
    var served = 0
    var latencies = [Double]()
    var configuration = SecureChannel.Configuration()
    configuration.handshakeTimeout = .seconds(10)
    for index in 0..<honestClients {
        let start = now()
        let message = ByteBuffer(string: "honest \(index)")
        let echoed = try? await connect(port: port, configuration: configuration).executeThenClose { inbound, outbound in
            try await outbound.write(message)
            var iterator = inbound.makeAsyncIterator()
            return try await iterator.next()
        }
        if echoed == message {
            served += 1
            latencies.append(now() - start)
        }
        try await Task.sleep(for: .milliseconds(200))
    }
    stop.withLockedValue { $0 = true }
    latencies.sort()
    let median = latencies.isEmpty ? 0 : latencies[latencies.count / 2]
    let attack = reopenAfter == 0 ? "\(sockets) idle sockets, each re-opened as soon as it is closed" : "\(sockets) idle sockets re-opened every \(reopenAfter) s"
    print(String(format: "SecureChannel under a flood of %@ (%d attacker connections in all): %d of %d honest clients served (%.0f%%, target >= 95%%), median %.0f ms each",
        attack, opened.withLockedValue { $0 }, served, honestClients, 100 * Double(served) / Double(honestClients), median * 1000))
    await server.close()
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "handshakes":
    try await handshakes(seconds: Double(arguments.dropFirst().first ?? "3")!, limit: 100_000, concurrency: 16)
case "bulk":
    try await bulk(
        totalBytes: 1 << 30, messageSize: 1 << 20, seconds: 60,
        protocolName: arguments.dropFirst().first ?? "Noise_XX_25519_ChaChaPoly_SHA256")
case "ceiling":
    ceiling(totalBytes: 1 << 30)
case "idle":
    try await idle(count: Int(arguments.dropFirst().first ?? "1000")!, seconds: 60)
case "flood":
    let rest = Array(arguments.dropFirst())
    try await flood(sockets: Int(rest.first ?? "1000")!, reopenAfter: Double(rest.dropFirst().first ?? "0")!, honestClients: 40)
default:
    print("usage: ChannelBenchmark handshakes [seconds] | bulk [protocol name] | ceiling | idle [count] | flood [sockets] [reopen seconds]")
}
