import ArgumentParser
import Crypto
import Foundation
import NIOCore
import SecureFoundation
import ServiceDiscovery

/// `sf channel`: a secure netcat over SecureChannel (Noise XX, X25519 keys by tag), with DNS-SD
/// discovery. Standard input goes to the peer, what the peer sends goes to standard output;
/// diagnostics (the bound address, the peer's verified fingerprint) go to standard error.
struct ChannelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channel",
        abstract: "A secure channel between two programs (Noise XX over TCP, keys by tag), found by DNS-SD.",
        subcommands: [ChannelServeCommand.self, ChannelConnectCommand.self, ChannelBrowseCommand.self])
}

/// Who the peer must be: exactly one policy (`--any-peer` only where allowed).
struct ChannelPeerOptions: ParsableArguments {
    @Option(help: "Accept only the X25519 key stored under this tag, authenticated by the vault (a partner key from `sf key import --tag` with the passcode).")
    var peerTag: String?
    @Option(help: "Accept only the key with this fingerprint (sha256-spki:<hex>, as `sf key fingerprint` prints).")
    var expectFingerprint: String?
    @Option(help: "Trust on first use: the key under this tag if present (authenticated by the vault), else accept the peer's key and store it there, sealed.")
    var trustOnFirstUse: String?

    var count: Int { [peerTag, expectFingerprint, trustOnFirstUse].compactMap { $0 }.count }

    func validate() throws {
        if count > 1 { throw ValidationError("give only one of --peer-tag, --expect-fingerprint, --trust-on-first-use") }
        if let expectFingerprint, KeyFingerprint(parsing: expectFingerprint) == nil {
            throw ValidationError("--expect-fingerprint takes sha256-spki: followed by 64 hex digits")
        }
    }

    /// The line naming the peer of `connection`: `peer verified: FP`; or, for the first contact
    /// under trust on first use (nothing verified the key), that its key was stored under `tag`;
    /// or, with `--any-peer` (`anyKey`), that its key was accepted unverified.
    static func peerLine(_ connection: SecureChannel.Connection, trustOnFirstUse tag: String?, anyKey: Bool = false) -> String {
        let fingerprint = connection.peerFingerprint.map(\.description) ?? "none"
        if anyKey { return "sf channel: peer key accepted (--any-peer: any key, not verified): \(fingerprint)" }
        guard connection.isPeerKeyNewlyTrusted, let tag else { return "sf channel: peer verified: \(fingerprint)" }
        return "sf channel: new peer key stored under \"\(PrintableText.escaped(tag))\" (trust on first use: not verified, "
            + "compare it with the peer's `sf key fingerprint`): \(fingerprint)"
    }

    /// The trust policy, stored keys authenticated through `sealer`; `anyPeer` when none was
    /// given and the caller allows it.
    func trust(store: KeyStore, sealer: any ItemSealer, anyPeer: Bool) throws -> SecureChannel.PeerTrust {
        if let peerTag { return try .pinned(tag: peerTag, in: store, sealer: sealer) }
        if let expectFingerprint, let fingerprint = KeyFingerprint(parsing: expectFingerprint) { return .fingerprint(fingerprint) }
        if let trustOnFirstUse { return .trustOnFirstUse(tag: trustOnFirstUse, in: store, sealer: sealer) }
        guard anyPeer else { throw ValidationError("say who the peer is: --peer-tag, --expect-fingerprint or --trust-on-first-use") }
        return .anyAuthenticatedKey
    }
}

/// The connection's timing: how long the handshake may take, and how soon a peer that vanished
/// without closing is noticed.
struct ChannelTimingOptions: ParsableArguments {
    @Option(help: "Seconds the handshake may take.") var handshakeTimeout: Double = 10
    @Option(help: "Probe the peer after this many whole seconds with nothing received (TCP keepalive, up to 6 probes over as long again): an idle peer that vanished without closing is noticed within about twice this; 0 turns the probes off.")
    var keepalive: Int = 60

    func validate() throws {
        try ChannelEndpoint.validateTimeout(handshakeTimeout, "--handshake-timeout")
        if !(0...600).contains(keepalive) { throw ValidationError("--keepalive is a number of seconds from 1 to 600, or 0 for none") }
    }

    /// The channel's configuration with these timings: `--keepalive S` probes after S seconds,
    /// then min(S, 6) probes S / probes seconds apart (rounded up), so the peer has from 2S to
    /// 2S + 5 seconds in all.
    var configuration: SecureChannel.Configuration {
        let probes = min(keepalive, 6)
        return SecureChannel.Configuration(
            handshakeTimeout: .milliseconds(Int64(handshakeTimeout * 1000)),
            keepalive: keepalive == 0
                ? nil
                : SecureChannel.Keepalive(
                    idle: .seconds(Int64(keepalive)), interval: .seconds(Int64((keepalive + probes - 1) / probes)), probes: probes))
    }
}

/// The local key: an X25519 key pair by tag, unlocked like `sf key --tag`.
struct ChannelKeyOptions: ParsableArguments {
    @Option(help: "Our X25519 key pair's tag (from `sf key generate --type x25519 --tag`).") var tag: String
    @OptionGroup var store: KeyStoreOptions

    /// The key store (kept open for trust on first use), its sealer (which authenticates the
    /// peer keys stored there) and our static key.
    func open() throws -> (KeyStore, any ItemSealer, Curve25519.KeyAgreement.PrivateKey) {
        let keyStore = try store.open()
        _ = try keyStore.publicKey(tag: tag)  // an unknown tag fails before a passcode is asked for
        let sealer = try store.sealer(keyStore.keychain)
        return (keyStore, sealer, try SecureChannel.staticKey(tag: tag, in: keyStore, sealer: sealer))
    }
}

/// `HOST:PORT`, with `[v6]:PORT` for IPv6 literals.
struct ChannelEndpoint: ExpressibleByArgument, CustomStringConvertible {
    let host: String
    let port: Int

    init?(argument: String) {
        guard let colon = argument.lastIndex(of: ":"), let port = Int(argument[argument.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(argument[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        self.host = host
        self.port = port
    }

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// A duration option in seconds must be positive and at most 600.
    static func validateTimeout(_ seconds: Double, _ option: String) throws {
        if !(seconds > 0 && seconds <= 600) { throw ValidationError("\(option) is a number of seconds above 0, at most 600") }
    }

    /// `seconds` (a validated option) as a duration.
    static func duration(_ seconds: Double) -> Duration { .seconds(seconds) }
}

struct ChannelServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Accept one secure connection (or more with --keep-serving): standard input to the peer, the peer to standard output.",
        discussion: """
            Prints `listening on HOST:PORT` (the bound port, useful with port 0) and, per connection, \
            `peer verified: sha256-spki:<hex>` on standard error (on first contact under \
            --trust-on-first-use, `new peer key stored under "TAG" ...` instead; with --any-peer, `peer key \
            accepted (--any-peer: any key, not verified): ...`). With --advertise, the instance is \
            advertised as _sf-channel._tcp on --interface with TXT fp, proto and v=2 while serving. \
            When standard input ends, the end of the stream is sent (authenticated) and reading goes \
            on until the peer's end of stream; the connection is complete when both have ended. With \
            --keep-serving, a connection ends at the peer's end of stream, and what standard input \
            has not delivered yet goes to the next connection. A connection closed without the \
            peer's end of stream is an error ("connection closed before the end of the stream", exit 1).
            """)

    @OptionGroup var key: ChannelKeyOptions
    @Option(help: "Address and port to listen on (port 0 picks one); default 127.0.0.1:0, or 0.0.0.0:0 with --advertise.")
    var listen: ChannelEndpoint?
    @Option(help: "Advertise this DNS-SD instance name (type _sf-channel._tcp) while serving; needs --interface.")
    var advertise: String?
    @Option(help: "The network interface to advertise on.") var interface: String?
    @OptionGroup var discovery: ChannelDiscoveryOption
    @OptionGroup var peer: ChannelPeerOptions
    @Flag(help: "Accept any peer that proves a static key (its fingerprint is printed).") var anyPeer = false
    @Flag(help: "Serve connections one after another (one at a time) instead of stopping after the first, each until the peer's end of stream; a connection that fails is reported and the next is served.")
    var keepServing = false
    @OptionGroup var timing: ChannelTimingOptions
    @Option(help: "End a connection on which nothing is sent or received for this many seconds; with --keep-serving 300 by default (connections are served one at a time, so a quiet peer would hold the server), none by default otherwise.")
    var idleTimeout: Double?
    @Flag(help: "Keep a connection however long nothing moves on it (with --keep-serving, a quiet peer then holds the server).")
    var noIdleTimeout = false

    /// The idle deadline of a served connection: `--idle-timeout`, or with `--keep-serving`, where
    /// a quiet peer would hold every later one, `keepServingIdleTimeout`; none with `--no-idle-timeout`.
    var servedIdleTimeout: Double? { noIdleTimeout ? nil : idleTimeout ?? (keepServing ? Self.keepServingIdleTimeout : nil) }

    /// The default idle deadline of `--keep-serving`, in seconds.
    static let keepServingIdleTimeout: Double = 300

    func validate() throws {
        if let idleTimeout { try ChannelEndpoint.validateTimeout(idleTimeout, "--idle-timeout") }
        if noIdleTimeout, idleTimeout != nil { throw ValidationError("--no-idle-timeout excludes --idle-timeout") }
        if anyPeer, peer.count > 0 { throw ValidationError("--any-peer excludes --peer-tag, --expect-fingerprint, --trust-on-first-use") }
        if !anyPeer, peer.count == 0 {
            throw ValidationError("say who the peer is: --peer-tag, --expect-fingerprint, --trust-on-first-use or --any-peer")
        }
        if (advertise == nil) != (interface == nil) { throw ValidationError("--advertise and --interface go together") }
    }

    func run() async throws {
        let log = ServeLog()
        do {
            try await serve(log: log)
        } catch {
            await log.flush()
            throw error
        }
        await log.flush()
    }

    /// Serves, saying what happens through `log`.
    private func serve(log: ServeLog) async throws {
        let (store, sealer, staticKey) = try key.open()
        let trust = try peer.trust(store: store, sealer: sealer, anyPeer: anyPeer)
        let endpoint = listen ?? ChannelEndpoint(host: advertise == nil ? "127.0.0.1" : "0.0.0.0", port: 0)
        let configuration = timing.configuration
        let server = try await SecureChannel.Server.bind(
            host: endpoint.host, port: endpoint.port, staticKey: staticKey, peer: trust, configuration: configuration,
            onHandshakeFailure: { error in log.report("sf channel: rejected a connection: \(error)") })
        log.say("sf channel: listening on \(ChannelEndpoint(host: endpoint.host, port: server.port))")
        // The deadline said here is the one every connection gets below.
        let idle = servedIdleTimeout
        if let idle {
            let seconds = idle == idle.rounded() ? String(Int(idle)) : String(idle)
            log.say("sf channel: a connection on which nothing moves for \(seconds) s is ended")
        }
        let advertiser = try await startAdvertising(port: server.port, staticKey: staticKey, configuration: configuration, log: log)
        let input = ChannelInput()
        var served = 0
        do {
            for await connection in server.connections {
                served += 1
                let fingerprint = connection.peerFingerprint.map(\.description) ?? "none"
                // With a trust policy only trusted peers are served (and the first-use notice must
                // be seen): those lines are the server's own. With --any-peer anyone can be, as
                // often as it likes: those lines are bounded as rejections are.
                let line = ChannelPeerOptions.peerLine(connection, trustOnFirstUse: peer.trustOnFirstUse, anyKey: anyPeer)
                if anyPeer { log.report(line) } else { log.say(line) }
                let idleTimeout = idle.map(ChannelEndpoint.duration)
                guard keepServing else {
                    try await ChannelSession.run(connection, input: input, completion: .bothDirections, idleTimeout: idleTimeout)
                    break
                }
                do {
                    try await ChannelSession.run(connection, input: input, completion: .peerEnds, idleTimeout: idleTimeout)
                } catch {
                    // A forged, replayed or malformed frame, an over-long message, a cut stream
                    // or a reset ends that connection only: the server says so and serves the next.
                    let line = "sf channel: connection from \(fingerprint) failed: \(error)"
                    if anyPeer { log.report(line) } else { log.say(line) }
                }
            }
        } catch {
            await stop(server, advertiser)
            throw error
        }
        await stop(server, advertiser)
        if served == 0 { throw CLIError("the server stopped before a peer connected") }
    }

    private func stop(_ server: SecureChannel.Server, _ advertiser: ChannelAdvertisement?) async {
        await advertiser?.stop()
        await server.close()
    }

    private func startAdvertising(
        port: Int, staticKey: Curve25519.KeyAgreement.PrivateKey, configuration: SecureChannel.Configuration, log: ServeLog
    ) async throws -> ChannelAdvertisement? {
        guard let advertise, let interface else { return nil }
        let txt = try TXTRecord(SecureChannel.Advertisement(staticKey: staticKey.publicKey, configuration: configuration).txtAttributes)
        let backend = discovery.backend(interface: interface)
        let advertisement = try await ChannelAdvertisement.start(interface: interface, name: advertise, port: port, txt: txt, backend: backend)
        log.say(
            "sf channel: advertising \"\(advertisement.name)\" (_sf-channel._tcp) on \(interface) port \(port) (discovery: \(backend))")
        return advertisement
    }
}

struct ChannelConnectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect",
        abstract: "Connect to a secure channel server at HOST:PORT or found by DNS-SD: standard input to the peer, the peer to standard output.",
        discussion: """
            With --browse, the instance is resolved on --interface; its TXT fingerprint is shown but \
            never trusted: only the handshake, checked against --peer-tag, --expect-fingerprint or \
            --trust-on-first-use, authenticates the server. Prints `peer verified: sha256-spki:<hex>` \
            on standard error (on first contact under --trust-on-first-use, `new peer key stored under \
            "TAG" ...` instead: nothing verified that key). When standard input ends, the end of the stream is sent (authenticated) \
            and reading goes on until the server's end of stream: exit 0 only when both directions \
            completed; a connection closed without the server's end of stream is an error \
            ("connection closed before the end of the stream", exit 1).
            """)

    @OptionGroup var key: ChannelKeyOptions
    @Argument(help: "The server's HOST:PORT (or use --browse).") var endpoint: ChannelEndpoint?
    @Option(help: "Resolve this DNS-SD instance name (type _sf-channel._tcp) instead of HOST:PORT; needs --interface.")
    var browse: String?
    @Option(help: "The network interface to browse on.") var interface: String?
    @OptionGroup var discovery: ChannelDiscoveryOption
    @Option(help: "Seconds to look for the --browse instance.") var timeout: Double = 5
    @OptionGroup var timing: ChannelTimingOptions
    @Option(help: "End the connection (exit 1) when nothing is sent or received for this many seconds (as nc -w): a server that goes quiet cannot hold the client.")
    var idleTimeout: Double?
    @OptionGroup var peer: ChannelPeerOptions

    func validate() throws {
        if let idleTimeout { try ChannelEndpoint.validateTimeout(idleTimeout, "--idle-timeout") }
        if (endpoint == nil) == (browse == nil) { throw ValidationError("give either HOST:PORT or --browse NAME") }
        if (browse == nil) != (interface == nil) { throw ValidationError("--browse and --interface go together") }
        if peer.count == 0 { throw ValidationError("say who the peer is: --peer-tag, --expect-fingerprint or --trust-on-first-use") }
        try ChannelEndpoint.validateTimeout(timeout, "--timeout")
    }

    func run() async throws {
        let (store, sealer, staticKey) = try key.open()
        let trust = try peer.trust(store: store, sealer: sealer, anyPeer: false)
        let target: ChannelEndpoint
        if let endpoint {
            target = endpoint
        } else if let browse, let interface {
            let found = try await ChannelDiscovery.resolve(name: browse, interface: interface, timeout: timeout, backend: discovery.backend(interface: interface))
            // Untrusted: shown as a hint only; the handshake decides.
            Terminal.writeError(
                "sf channel: found \"\(Terminal.printable(found.name))\" at \(found.endpoint) (advertised fp \(found.fingerprint ?? "none"), not trusted)")
            target = found.endpoint
        } else {
            throw ValidationError("give either HOST:PORT or --browse NAME")
        }
        let connection: SecureChannel.Connection
        do {
            connection = try await SecureChannel.Client.connect(
                host: target.host, port: target.port, staticKey: staticKey, peer: trust, configuration: timing.configuration)
        } catch let error as SecureChannelError {
            throw CLIError("\(target): \(error)")
        } catch {
            throw CLIError("cannot connect to \(target): \(error)")
        }
        Terminal.writeError(ChannelPeerOptions.peerLine(connection, trustOnFirstUse: peer.trustOnFirstUse))
        try await ChannelSession.run(connection, input: ChannelInput(), completion: .bothDirections, idleTimeout: idleTimeout.map(ChannelEndpoint.duration))
    }
}

struct ChannelBrowseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browse",
        abstract: "List the secure channel servers advertised on an interface: name, host, address:port, advertised fingerprint.",
        discussion: "Everything listed is untrusted; only the handshake of `sf channel connect` authenticates a server.")

    @Option(help: "The network interface to browse on.") var interface: String
    @OptionGroup var discovery: ChannelDiscoveryOption
    @Option(help: "Seconds to listen for answers.") var timeout: Double = 3
    @Flag(help: "Print a JSON array of {name, host, address, addresses, port, fp} objects.") var json = false

    func validate() throws {
        try ChannelEndpoint.validateTimeout(timeout, "--timeout")
    }

    struct Row: Encodable {
        let name: String, host: String, address: String?, addresses: [String], port: Int, fp: String?
    }

    func run() async throws {
        let rows = try await ChannelDiscovery.browse(interface: interface, timeout: timeout, backend: discovery.backend(interface: interface))
        if json { return try JSONOutput.print(rows) }
        for row in rows {
            print([row.name, row.host, "\(row.address ?? "-"):\(row.port)", row.fp ?? "-"].map(Terminal.printable).joined(separator: "\t"))
        }
    }
}

/// `--discovery` for the `sf channel` commands that advertise or browse.
struct ChannelDiscoveryOption: ParsableArguments {
    @Option(
        help: """
            Service discovery backend: auto (the default: the system's DNS-SD daemon when it answers, so one \
            responder speaks for the host, else sf's own), builtin (sf's own multicast DNS responder and querier, \
            Linux only) or system (the system's DNS-SD daemon: mDNSResponder, or avahi-daemon through \
            libdns_sd.so.1 on Linux).
            """)
    var discovery: String?

    func validate() throws {
        if let discovery, discovery.lowercased() != DiscoveryBackend.automaticName, DiscoveryBackend(discovery) == nil {
            throw ValidationError("--discovery must be auto, \(DiscoveryBackend.platformDefault == .system ? "system" : "builtin or system")")
        }
    }

    /// The backend for work on `interface` (`auto`, the default, asks the system's daemon there).
    func backend(interface: String) -> DiscoveryBackend {
        DiscoveryBackend.chosen(discovery, interface: interface) ?? .platformDefault
    }
}

/// DNS-SD for `sf channel` (ServiceDiscovery with the chosen backend).
enum ChannelDiscovery {
    struct Found {
        let name: String
        let endpoint: ChannelEndpoint
        /// The advertised fingerprint as parsed, "invalid" when what was advertised is not one.
        let fingerprint: String?
    }

    static func preferredAddress(_ instance: ServiceInstance) -> String? {
        (instance.addresses.first { if case .v4 = $0 { true } else { false } } ?? instance.addresses.first)?.description
    }

    static func resolve(name: String, interface: String, timeout: Double, backend: DiscoveryBackend) async throws -> Found {
        let instance = try await ServiceBrowser(interface: interface, backend: backend).resolve(
            instanceName: name, timeout: ChannelEndpoint.duration(timeout))
        guard let address = preferredAddress(instance) else { throw CLIError("no service address for \"\(name)\"") }
        return Found(
            name: instance.name, endpoint: ChannelEndpoint(host: address, port: Int(instance.port)),
            fingerprint: advertisedFingerprint(instance))
    }

    static func browse(interface: String, timeout: Double, backend: DiscoveryBackend) async throws -> [ChannelBrowseCommand.Row] {
        try await ServiceBrowser(interface: interface, backend: backend).browse(timeout: ChannelEndpoint.duration(timeout)).map {
            ChannelBrowseCommand.Row(
                name: $0.name, host: $0.host.description, address: preferredAddress($0), addresses: $0.addresses.map(\.description),
                port: Int($0.port), fp: advertisedFingerprint($0))
        }
    }

    /// The fingerprint the instance's TXT record advertises (untrusted), in its canonical form;
    /// "invalid" for anything else it holds (never shown as it came).
    static func advertisedFingerprint(_ instance: ServiceInstance) -> String? {
        let advertisement = SecureChannel.Advertisement { instance.txt[$0]?.string }
        guard advertisement.advertisedFingerprint != nil else { return nil }
        return advertisement.fingerprint?.description ?? "invalid"
    }
}

/// A running advertisement.
struct ChannelAdvertisement {
    let name: String
    let advertiser: ServiceAdvertiser

    static func start(interface: String, name: String, port: Int, txt: TXTRecord, backend: DiscoveryBackend) async throws -> ChannelAdvertisement {
        let advertiser = try ServiceAdvertiser(interface: interface, instanceName: name, port: UInt16(port), txt: txt, backend: backend)
        let records = try await advertiser.start()
        let advertised = records.instanceName.labels.first.map { String(decoding: $0, as: UTF8.self) } ?? name
        return ChannelAdvertisement(name: advertised, advertiser: advertiser)
    }

    func stop() async { await advertiser.stop() }
}
