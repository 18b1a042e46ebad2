import NIOCore

/// Watches the login on a connection without TLS and refuses a server that asks for the password
/// in clear text or as an MD5 digest (PostgreSQL's `AuthenticationCleartextPassword`, code 3, and
/// `AuthenticationMD5Password`, code 5), before postgres-nio answers it, or, when the client has a
/// password, one that says the login succeeded (code 0) without a SCRAM exchange (code 10 first):
/// without verified TLS the party answering may not be the server (whoever took the port while the
/// server restarts, or anyone on the path with `sslmode=disable`). SCRAM-SHA-256 never sends the
/// password, and its end proves the server holds the password's verifier, as libpq's
/// `require_auth=scram-sha-256`. SCRAM's work is the server's to choose (its iteration count), and
/// postgres-nio computes it on the connection's event loop, where it would hold up every deadline
/// timer and connection of that loop: a count above `maximumSCRAMIterations` is refused before it
/// is computed. It sits first in the pipeline, passes every byte on unchanged (holding back only
/// the SCRAM message until its count is checked), and leaves once the login succeeded.
final class PasswordLoginGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The server asked for a login method that would reveal the password.
    struct Refused: Error, CustomStringConvertible {
        let method: String
        var description: String {
            let what = method.isEmpty
                ? "the server accepted the login without checking the password, on a connection without TLS (it may not be the server)"
                : "the server asked for the password \(method) on a connection without TLS, which would hand it to whoever answered"
            return what + "; use scram-sha-256 in the server's pg_hba.conf (and password_encryption = scram-sha-256), "
                + "or connect with TLS (sslmode=verify-full)"
        }
    }

    /// The server asked for more SCRAM work than the client does (`maximumSCRAMIterations`).
    struct ExcessiveSCRAMCost: Error, CustomStringConvertible {
        /// The count the server asked for, as it sent it.
        let iterations: String
        var description: String {
            "the server asked for \(iterations) SCRAM-SHA-256 iterations, more than the \(maximumSCRAMIterations) "
                + "this client computes on a connection without TLS (PostgreSQL's default is 4096; whoever answered may not be "
                + "the server); lower scram_iterations on the server and set the password again, or connect with TLS (sslmode=verify-full)"
        }
    }

    /// The most SCRAM-SHA-256 iterations computed for a server not verified by TLS: 244 times
    /// PostgreSQL's default (4,096), above the counts recommended for PBKDF2-HMAC-SHA256 today
    /// (OpenSSL computes a million in about 0.6 s on one core here; postgres-nio's own loop is slower).
    static let maximumSCRAMIterations = 1_000_000
    /// The longest SCRAM server-first message held back to be checked (PostgreSQL's is about 90
    /// bytes: the nonces, a 16-byte salt in base64, the count).
    static let maximumSCRAMMessage = 4096

    /// The start of the message being read (type, length and, for an authentication request,
    /// its code), until it is known.
    private var header: [UInt8] = []
    /// Bytes of the current message still to pass on unexamined.
    private var passing = 0
    /// The login succeeded: the rest is passed on and the guard leaves.
    private var loggedIn = false
    /// The client has a password, so the server must prove it knows its verifier (SCRAM).
    private let requiresSCRAM: Bool
    /// The server began a SASL (SCRAM) exchange.
    private var sawSASL = false
    /// The SCRAM server-first message (`AuthenticationSASLContinue`, code 11), held back until its
    /// iteration count is checked, and how many of its bytes are still to come.
    private var held: [UInt8] = []
    private var holding = 0

    init(requiresSCRAM: Bool) { self.requiresSCRAM = requiresSCRAM }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var input = unwrapInboundIn(data)
        var output = context.channel.allocator.buffer(capacity: input.readableBytes)
        while input.readableBytes > 0, !loggedIn {
            if passing > 0 {
                let count = min(passing, input.readableBytes)
                var part = input.readSlice(length: count)!
                output.writeBuffer(&part)
                passing -= count
                continue
            }
            if holding > 0 {
                let count = min(holding, input.readableBytes)
                held += input.readBytes(length: count)!
                holding -= count
                guard holding == 0 else { continue }
                if let refusal = Self.excessiveCost(inServerFirstMessage: held.dropFirst(9)) {
                    return refuse(refusal, context: context)
                }
                output.writeBytes(held)
                held = []
                continue
            }
            header.append(input.readInteger(as: UInt8.self)!)
            guard header.count >= 5 else { continue }
            let length = Int(header[1..<5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            if header[0] == UInt8(ascii: "R"), length >= 8 {
                guard header.count == 9 else { continue }
                switch header[5..<9].reduce(UInt32(0), { $0 << 8 | UInt32($1) }) {
                case 3: return refuse(Refused(method: "in clear text"), context: context)
                case 5: return refuse(Refused(method: "as an MD5 digest"), context: context)
                case 10: sawSASL = true
                case 11 where length - 8 > 0:
                    guard length - 8 <= Self.maximumSCRAMMessage else {
                        return refuse(ExcessiveSCRAMCost(iterations: "(a message of \(length) bytes)"), context: context)
                    }
                    held = header
                    holding = length - 8
                    header = []
                    continue
                case 0:
                    if requiresSCRAM, !sawSASL { return refuse(Refused(method: ""), context: context) }
                    loggedIn = true
                default: break
                }
            }
            // A length below 4 is malformed: postgres-nio's decoder reports it.
            output.writeBytes(header)
            passing = max(0, length - (header.count - 1))
            header = []
        }
        if loggedIn { output.writeBuffer(&input) }
        if output.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(output)) }
        if loggedIn { context.pipeline.syncOperations.removeHandler(self, promise: nil) }
    }

    /// The refusal of a SCRAM server-first message (`r=…,s=…,i=…`) whose count is above the
    /// ceiling; nil when it is within it, or not a count at all (postgres-nio reports that).
    static func excessiveCost(inServerFirstMessage message: ArraySlice<UInt8>) -> ExcessiveSCRAMCost? {
        for attribute in message.split(separator: UInt8(ascii: ",")) where attribute.starts(with: [UInt8(ascii: "i"), UInt8(ascii: "=")]) {
            var digits = attribute.dropFirst(2)
            // postgres-nio reads the count with Swift's integer parser, which takes a leading "+".
            if digits.first == UInt8(ascii: "+") { digits = digits.dropFirst() }
            guard !digits.isEmpty, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
            let count = String(decoding: digits, as: UTF8.self)
            // Digits too many for an Int are above the ceiling too.
            guard let value = Int(count), value <= maximumSCRAMIterations else { return ExcessiveSCRAMCost(iterations: count) }
            return nil
        }
        return nil
    }

    private func refuse(_ refusal: any Error, context: ChannelHandlerContext) {
        context.fireErrorCaught(refusal)
        context.close(promise: nil)
    }
}
