import Foundation
import SecureCore

/// A TCP relay on loopback in front of a PostgreSQL server (plain text, so it can see the
/// protocol) that loses one write transaction's COMMIT when armed: the COMMIT of the next
/// transaction that began `BEGIN ISOLATION LEVEL READ COMMITTED` on a connection. `.answer` passes
/// the COMMIT on and closes both sides as the server answers; `.fatalAnswer` does the same but
/// first tells the client, in the server's stead, that the session ended (an ErrorResponse of
/// severity FATAL, SQLSTATE 08P01, as PgBouncer sends when it loses its server connection);
/// `.errorAnswer` does the same with an error of severity ERROR (08P01), as a pooler that relays
/// its lost server connection as a statement's error does (PgBouncer before 1.21);
/// `.errorAnswerKeepingTheSession` answers with that error and ReadyForQuery instead of the
/// server's answer and goes on relaying (a pooler in transaction mode, whose next statement runs
/// in another server session: here the same one, whose transaction has ended);
/// `.serializationFailureKeepingTheSession` does the same with a serialization failure (ERROR
/// 40001), which a real server never gives a COMMIT that committed, and which has a transaction run
/// again;
/// `.garbledAnswer` does the same with an answer the client cannot read (a message of an unknown
/// type); `.request` keeps it from the server and closes the client's side only, leaving the server's
/// process idle in its transaction (as a link that failed silently would); `.requestPassedOn`
/// passes it on and at once closes the client's side, so the client loses the connection while
/// the server's process is still working on the COMMIT (whose answer is then dropped). Unchecked Sendable: its mutable state is behind `Locked`, and
/// each socket is read by one thread.
public final class CommitCuttingRelay: @unchecked Sendable {
    /// How a COMMIT is lost.
    public enum Cut: Sendable {
        case answer, fatalAnswer, errorAnswer, errorAnswerKeepingTheSession, serializationFailureKeepingTheSession, garbledAnswer, request,
            requestPassedOn
    }

    /// The port clients connect to.
    public let port: Int
    private let serverPort: Int
    private let listener: Int32
    private struct State {
        var armed: Cut?
        var afterCut: (@Sendable () -> Void)?
        var holding = false
        var cuts = 0
        var sockets: [Int32] = []
        var serverSidePorts: [Int] = []
        /// Client sockets whose bytes, both ways, are dropped.
        var silenced: Set<Int32> = []
        var clients: [Int32] = []
        /// Bytes to send the client, in the server's stead, right after the server's next
        /// CopyInResponse.
        var copyLie: Data?
        var copyLies = 0
    }
    private let state = Locked(State())
    private let done = DispatchGroup()

    /// Lies told after a CopyInResponse so far.
    public var copyLies: Int { state.withLock { $0.copyLies } }

    /// Sends `lie` to the client, as if from the server, right after the server's next
    /// CopyInResponse ("the copy may begin"), before anything else from it: a ReadyForQuery, say,
    /// which no server sends while a copy's data comes.
    public func lieAfterCopyStarts(_ lie: Data) {
        state.withLock { $0.copyLie = lie }
    }

    /// COMMITs lost so far.
    public var cuts: Int { state.withLock { $0.cuts } }
    /// The local ports of the relay's connections to the server (`pg_stat_activity.client_port`).
    public var serverSidePorts: [Int] { state.withLock { $0.serverSidePorts } }

    /// A relay to the server on 127.0.0.1:`serverPort`.
    public init(serverPort: Int) throws {
        self.serverPort = serverPort
        let (fd, port) = try TestSupport.loopbackSocket(listening: true, port: 0)
        listener = fd
        self.port = port
        // A thread of its own: the global queue's few threads may all be held by other tests.
        done.enter()
        Thread.detachNewThread { [self] in
            defer { done.leave() }
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else {
                    if errno == EINTR { continue }
                    return  // stopped
                }
                state.withLock {
                    $0.sockets.append(client)
                    $0.clients.append(client)
                }
                Thread.detachNewThread { self.relay(client) }
            }
        }
    }

    /// Loses the next write transaction's COMMIT, as `cut` says, and then runs `afterCut` (on the
    /// relay's thread, before anything else passes).
    public func arm(_ cut: Cut, then afterCut: (@Sendable () -> Void)? = nil) {
        state.withLock {
            $0.armed = cut
            $0.afterCut = afterCut
        }
    }

    /// From now on, drops every byte of the connections accepted so far, both ways, keeping them
    /// open: a path gone silent (a NAT or a load balancer that forgot them, a cable cut). Later
    /// connections pass as before.
    public func silenceExistingConnections() {
        state.withLock { $0.silenced.formUnion($0.clients) }
    }

    /// While `hold` is true, connections accepted are not passed on to the server: each waits
    /// (its client waiting for the server's first answer) until the hold ends.
    public func holdNewConnections(_ hold: Bool) { state.withLock { $0.holding = hold } }

    /// Passes `client` on to the server once no hold is on.
    private func relay(_ client: Int32) {
        while state.withLock({ $0.holding }) { usleep(10_000) }
        guard let (server, localPort) = try? TestSupport.loopbackSocket(listening: false, port: serverPort) else {
            shutdown(client, Int32(SHUT_RDWR))
            return
        }
        state.withLock {
            $0.sockets.append(server)
            $0.serverSidePorts.append(localPort)
        }
        let cutOnAnswer = Locked<Cut?>(nil)
        Thread.detachNewThread { self.serverToClient(server, client, cutOnAnswer) }
        clientToServer(client, server, cutOnAnswer)
    }

    /// Stops accepting and closes every connection (the server's processes then end).
    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        _ = done.wait(timeout: .now() + 60)
        close(listener)
        for fd in state.withLock({ $0.sockets }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func clientToServer(_ client: Int32, _ server: Int32, _ cutOnAnswer: Locked<Cut?>) {
        let writeBegin = Data("BEGIN ISOLATION LEVEL READ COMMITTED\0".utf8)
        let readOnlyBegin = Data("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY\0".utf8)
        let commit = Data("COMMIT\0".utf8), rollback = Data("ROLLBACK\0".utf8)
        var inWriteTransaction = false
        // The end of the bytes read before, so that a statement split across two reads is seen.
        var carried: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(client, &buffer, buffer.count)
            guard count > 0 else { break }
            if state.withLock({ $0.silenced.contains(client) }) { continue }
            let chunk = Data(buffer[0..<count])
            let window = Data(carried + buffer[0..<count])  // indices from 0
            // Whether `marker` ends in this read's bytes.
            func sees(_ marker: Data) -> Bool {
                window.range(of: marker, in: max(0, carried.count - marker.count + 1)..<window.count) != nil
            }
            carried = Array(window.suffix(63))
            if sees(writeBegin) { inWriteTransaction = true } else if sees(readOnlyBegin) { inWriteTransaction = false }
            if sees(rollback) { inWriteTransaction = false }
            if sees(commit) {
                let (cut, afterCut): (Cut?, (@Sendable () -> Void)?) = state.withLock { state in
                    guard inWriteTransaction, let armed = state.armed else { return (nil, nil) }
                    state.armed = nil
                    state.cuts += 1
                    defer { state.afterCut = nil }
                    return (armed, state.afterCut)
                }
                inWriteTransaction = false
                switch cut {
                case .answer?, .fatalAnswer?, .errorAnswer?, .errorAnswerKeepingTheSession?, .serializationFailureKeepingTheSession?,
                    .garbledAnswer?:
                    cutOnAnswer.withLock { $0 = cut }
                    afterCut?()
                case .requestPassedOn?:
                    // The server's answer, when it comes, ends its side too.
                    cutOnAnswer.withLock { $0 = .answer }
                    _ = Self.writeAll(server, chunk)
                    shutdown(client, Int32(SHUT_RDWR))
                    afterCut?()
                    return
                case .request?:
                    // The client meets the end of its connection; the server hears nothing more.
                    shutdown(client, Int32(SHUT_RDWR))
                    afterCut?()
                    return
                case nil:
                    break
                }
            }
            guard Self.writeAll(server, chunk) else { break }
        }
        shutdown(server, Int32(SHUT_RDWR))
    }

    private func serverToClient(_ server: Int32, _ client: Int32, _ cutOnAnswer: Locked<Cut?>) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        // Where the server's messages end (type, 4-byte length counting itself, body): the header
        // bytes of the current one read so far, and how much of its body is still to come.
        var header: [UInt8] = []
        var type: UInt8 = 0
        var remaining = 0
        while true {
            var count = read(server, &buffer, buffer.count)
            guard count > 0 else { break }
            var offset = 0
            while offset < count {
                if remaining > 0 {
                    let step = min(remaining, count - offset)
                    remaining -= step
                    offset += step
                } else {
                    header.append(buffer[offset])
                    offset += 1
                    guard header.count == 5 else { continue }
                    type = header[0]
                    remaining = max(0, Int(header[1..<5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }) - 4)
                    header = []
                }
                guard remaining == 0, header.isEmpty, type == UInt8(ascii: "G") else { continue }
                let lie: Data? = state.withLock { state in
                    defer { state.copyLie = nil }
                    if state.copyLie != nil { state.copyLies += 1 }
                    return state.copyLie
                }
                guard let lie else { continue }
                // The bytes up to the CopyInResponse's end, the lie, then the rest as usual.
                guard Self.writeAll(client, Data(buffer[0..<offset]) + lie) else { break }
                buffer.removeFirst(offset)
                buffer.append(contentsOf: [UInt8](repeating: 0, count: offset))
                count -= offset
                offset = 0
            }
            guard count > 0 else { continue }
            if state.withLock({ $0.silenced.contains(client) }) { continue }
            if let cut = cutOnAnswer.withLock({ $0 }) {
                if cut == .errorAnswerKeepingTheSession || cut == .serializationFailureKeepingTheSession {
                    cutOnAnswer.withLock { $0 = nil }
                    let error = cut == .errorAnswerKeepingTheSession
                        ? Self.sessionError(severity: "ERROR")
                        : Self.errorResponse(severity: "ERROR", sqlState: "40001", message: "could not serialize access due to concurrent update")
                    guard Self.writeAll(client, error + Data("Z".utf8) + Data([0, 0, 0, 5]) + Data("I".utf8)) else { break }
                    continue
                }
                switch cut {
                case .fatalAnswer: _ = Self.writeAll(client, Self.sessionError(severity: "FATAL"))
                case .errorAnswer: _ = Self.writeAll(client, Self.sessionError(severity: "ERROR"))
                case .garbledAnswer: _ = Self.writeAll(client, Data("?".utf8) + Data([0, 0, 0, 4]))  // type '?', no body
                default: break
                }
                break
            }
            guard Self.writeAll(client, Data(buffer[0..<count])) else { break }
        }
        shutdown(client, Int32(SHUT_RDWR))
        shutdown(server, Int32(SHUT_RDWR))
    }

    /// An ErrorResponse of `severity`, SQLSTATE 08P01, PgBouncer's message for a lost server.
    private static func sessionError(severity: String) -> Data {
        errorResponse(severity: severity, sqlState: "08P01", message: "server conn crashed?")
    }

    /// A PostgreSQL ErrorResponse message of `severity` (ERROR, FATAL, PANIC) with `sqlState`.
    public static func errorResponse(severity: String, sqlState: String, message: String) -> Data {
        var fields = Data()
        for (code, value) in [("S", severity), ("V", severity), ("C", sqlState), ("M", message)] {
            fields += Data(code.utf8) + Data(value.utf8) + Data([0])
        }
        fields.append(0)
        let length = UInt32(4 + fields.count)
        return Data("E".utf8) + Data([UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]) + fields
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
}
