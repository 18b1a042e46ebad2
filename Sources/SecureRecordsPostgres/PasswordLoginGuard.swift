import NIOCore

/// Watches the login on a connection without TLS and refuses a server that asks for the password
/// in clear text or as an MD5 digest (PostgreSQL's `AuthenticationCleartextPassword`, code 3, and
/// `AuthenticationMD5Password`, code 5), before postgres-nio answers it, or, when the client has a
/// password, one that says the login succeeded (code 0) without a SCRAM exchange (code 10 first):
/// without verified TLS the party answering may not be the server (whoever took the port while the
/// server restarts, or anyone on the path with `sslmode=disable`). SCRAM-SHA-256 never sends the
/// password, and its end proves the server holds the password's verifier, as libpq's
/// `require_auth=scram-sha-256`. It sits first in the pipeline, passes every byte on unchanged, and
/// leaves once the login succeeded.
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
            header.append(input.readInteger(as: UInt8.self)!)
            guard header.count >= 5 else { continue }
            let length = Int(header[1..<5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            if header[0] == UInt8(ascii: "R"), length >= 8 {
                guard header.count == 9 else { continue }
                switch header[5..<9].reduce(UInt32(0), { $0 << 8 | UInt32($1) }) {
                case 3: return refuse(Refused(method: "in clear text"), context: context)
                case 5: return refuse(Refused(method: "as an MD5 digest"), context: context)
                case 10: sawSASL = true
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

    private func refuse(_ refusal: Refused, context: ChannelHandlerContext) {
        context.fireErrorCaught(refusal)
        context.close(promise: nil)
    }
}
