import Foundation
import SFTestSupport
@testable import SecureRecords
import SecureRecordsPostgres
import SecureCore
import Testing

/// A connection lost after a write's COMMIT was sent is settled by the server's record of that
/// transaction (`txid_status`), for every kind of write: the call returns as if nothing had
/// happened when the server committed, and runs again when it did not; a server process left idle
/// in the transaction (the COMMIT never reached it) is ended, not waited for.
@Suite struct LostCommitTests {
    /// Every kind of write loses the COMMIT of its first write transaction once, through a relay:
    /// `.answer`, the server committed and only its answer was lost (before, a collection, a key, an
    /// update, a delete gave `outcomeUnknown`, and a delete retried by hand `recordNotFound`);
    /// `.request`, the COMMIT never reached the server, whose process stays in the transaction
    /// holding its locks (before, an add read that its record was missing, ran again, and waited on
    /// that process's row until the lock timeout). Each call succeeds, and the store holds each
    /// change once.
    @Test(.requires(.postgres), arguments: [CommitCuttingRelay.Cut.answer, .request])
    func everyWriteWhoseCommitIsLostIsSettledByTheServer(cut: CommitCuttingRelay.Cut) throws {
        let scratch = try RecordsScratch(.postgres)
        let direct = try #require(try scratch.storage() as? PostgresRecordStorage)
        var configuration = direct.configuration
        let relay = try CommitCuttingRelay(serverPort: configuration.port)
        defer { relay.stop() }
        configuration.host = "127.0.0.1"
        configuration.port = relay.port
        configuration.tls = .disabled
        let store = try RecordStore(storage: try PostgresRecordStorage(configuration: configuration), configuration: testConfiguration)
        var cuts = 0
        func losingItsCommit<T>(_ what: String, _ body: () throws -> T) throws -> T {
            relay.arm(cut)
            let result = try body()
            cuts += 1
            #expect(relay.cuts == cuts, "\(what): no COMMIT was cut")
            return result
        }

        try losingItsCommit("a collection") { try store.createCollection("gifts", schema: giftSchema) }
        try losingItsCommit("the first key") { try store.unlock(with: appSealer) }
        let id = try losingItsCommit("an add") { try store.add(["toWhom": "Alice", "description": "a kite"], to: "gifts") }
        let many = try losingItsCommit("a bulk add") {
            try store.add(contentsOf: (0..<300).map { ["toWhom": .string("B\($0)"), "description": "d"] }, to: "gifts")
        }
        try losingItsCommit("an update") { try store.update(id, setting: ["description": "a red kite"]) }
        try losingItsCommit("a delete") { try store.delete(many[0]) }
        let rotation = try losingItsCommit("a rotation's key switch") { try store.rotateStoreKey(with: appSealer) }

        let reader = try RecordStore(storage: direct, configuration: testConfiguration)
        try reader.unlock(with: appSealer)
        #expect(try reader.open(id).openedFields["description"] == "a red kite")
        #expect(try reader.search(in: "gifts").count == 300, "the add and 299 of the bulk add, each once")
        #expect(try direct.record(many[0]) == nil)
        #expect(rotation.keyId == 2 && rotation.resealed == 300)
        #expect(try direct.records(withKeyIdOtherThan: 2, after: 0, limit: 1).records.isEmpty)
        // No server process of the relay's connections is left in a transaction.
        let ports = relay.serverSidePorts.map(String.init).joined(separator: ",")
        let lingering = try direct.queryText(
            "SELECT count(*)::text FROM pg_stat_activity WHERE client_port IN (\(ports)) AND state LIKE 'idle in transaction%'")
        #expect(lingering == ["0"])
    }
}

/// A TCP relay on loopback in front of the test server (plain text, so it can see the protocol)
/// that loses one write transaction's COMMIT when armed: the COMMIT of the next transaction that
/// began `BEGIN ISOLATION LEVEL READ COMMITTED` on a connection. `.answer` passes the COMMIT on and
/// closes both sides as the server answers; `.request` keeps it from the server and closes the
/// client's side only, leaving the server's process idle in its transaction (as a link that
/// failed silently would).
final class CommitCuttingRelay: @unchecked Sendable {
    enum Cut: Sendable { case answer, request }

    let port: Int
    private let serverPort: Int
    private let listener: Int32
    private struct State {
        var armed: Cut?
        var cuts = 0
        var sockets: [Int32] = []
        var serverSidePorts: [Int] = []
    }
    private let state = Locked(State())
    private let done = DispatchGroup()

    /// COMMITs lost so far.
    var cuts: Int { state.withLock { $0.cuts } }
    /// The local ports of the relay's connections to the server (`pg_stat_activity.client_port`).
    var serverSidePorts: [Int] { state.withLock { $0.serverSidePorts } }

    init(serverPort: Int) throws {
        self.serverPort = serverPort
        let (fd, port) = try Self.socket(listening: true, port: 0)
        listener = fd
        self.port = port
        DispatchQueue.global().async(group: done) { [self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else {
                    if errno == EINTR { continue }
                    return  // stopped
                }
                guard let (server, localPort) = try? Self.socket(listening: false, port: serverPort) else {
                    close(client)
                    continue
                }
                state.withLock {
                    $0.sockets += [client, server]
                    $0.serverSidePorts.append(localPort)
                }
                let cutOnAnswer = Locked(false)
                Thread.detachNewThread { self.clientToServer(client, server, cutOnAnswer) }
                Thread.detachNewThread { self.serverToClient(server, client, cutOnAnswer) }
            }
        }
    }

    /// Loses the next write transaction's COMMIT, as `cut` says.
    func arm(_ cut: Cut) { state.withLock { $0.armed = cut } }

    /// Stops accepting and closes every connection (the server's processes then end).
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        _ = done.wait(timeout: .now() + 60)
        close(listener)
        for fd in state.withLock({ $0.sockets }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func clientToServer(_ client: Int32, _ server: Int32, _ cutOnAnswer: Locked<Bool>) {
        let commit = Data("COMMIT\0".utf8), begin = Data("BEGIN ISOLATION LEVEL READ COMMITTED\0".utf8)
        var inWriteTransaction = false
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(client, &buffer, buffer.count)
            guard count > 0 else { break }
            let chunk = Data(buffer[0..<count])
            if chunk.range(of: begin) != nil { inWriteTransaction = true }
            if chunk.range(of: commit) != nil {
                let cut: Cut? = state.withLock { state in
                    guard inWriteTransaction, let armed = state.armed else { return nil }
                    state.armed = nil
                    state.cuts += 1
                    return armed
                }
                inWriteTransaction = false
                switch cut {
                case .answer?:
                    cutOnAnswer.withLock { $0 = true }
                case .request?:
                    // The client meets the end of its connection; the server hears nothing more.
                    shutdown(client, Int32(SHUT_RDWR))
                    return
                case nil:
                    break
                }
            }
            guard Self.writeAll(server, chunk) else { break }
        }
        shutdown(server, Int32(SHUT_RDWR))
    }

    private func serverToClient(_ server: Int32, _ client: Int32, _ cutOnAnswer: Locked<Bool>) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(server, &buffer, buffer.count)
            guard count > 0, !cutOnAnswer.withLock({ $0 }) else { break }
            guard Self.writeAll(client, Data(buffer[0..<count])) else { break }
        }
        shutdown(client, Int32(SHUT_RDWR))
        shutdown(server, Int32(SHUT_RDWR))
    }

    private static func writeAll(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }

    /// A TCP socket on 127.0.0.1: listening on `port` (0: any), or connected to it; with its local port.
    private static func socket(listening: Bool, port: Int) throws -> (Int32, Int) {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let done = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                (listening ? bind(fd, address, length) == 0 && listen(fd, 16) == 0 : connect(fd, address, length) == 0)
                    && getsockname(fd, address, &length) == 0
            }
        }
        guard done else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
