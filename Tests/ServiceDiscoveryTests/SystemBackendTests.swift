import Foundation
import SFTestSupport
import Testing

@testable import ServiceDiscovery

/// The `.system` backend (the DNS-SD C API of the system's daemon) against avahi-daemon, which runs
/// inside one namespace of the test's `NamespacePair` on a private D-Bus (see `NamespaceAvahi`);
/// its peers are Python zeroconf and our `.builtIn` backend in the other namespace. Skipped with
/// the reason when namespaces, avahi-daemon, dbus-daemon or libdns_sd are missing; under CI=true
/// they must run.
@Suite("System DNS-SD backend (avahi-daemon in network namespaces)", .serialized)
struct SystemBackendTests {
    static let reason = NamespacePair.unavailableReason ?? NamespaceAvahi.unavailableReason ?? DiscoveryPeers.zeroconfReason
    static let available = NamespacePair.available && NamespaceAvahi.unavailableReason == nil && DiscoveryPeers.zeroconfAvailable
    static let canRun = available || TestSupport.isCI
    static let libraryReason = DiscoveryBackend.systemUnavailableReason ?? ""
    static let canLoadLibrary = DiscoveryBackend.systemUnavailableReason == nil || TestSupport.isCI

    static let txt = ["fp": "3f1c9a0b", "proto": "Noise_XX_25519_ChaChaPoly_SHA256", "v": "1"]
    static let txtArguments = txt.keys.sorted().flatMap { ["--txt", "\($0)=\(txt[$0]!)"] }

    func requirements() throws -> String {
        try #require(NamespacePair.available, Comment(rawValue: NamespacePair.unavailableReason ?? ""))
        try #require(NamespaceAvahi.unavailableReason == nil, Comment(rawValue: NamespaceAvahi.unavailableReason ?? ""))
        try #require(DiscoveryPeers.zeroconfAvailable, Comment(rawValue: DiscoveryPeers.zeroconfReason))
        return try #require(DiscoveryPeers.probe, "sf-discovery-probe was not built beside the tests")
    }

    func decode(_ text: String) throws -> [String: Any] {
        let line = text.split(separator: "\n").last.map(String.init) ?? ""
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(text)")
    }

    @Test("a missing DNS-SD library is systemDiscoveryUnavailable, naming the library")
    func libraryMissing() {
        let result = SystemDNSServiceLibrary.load("libsf-no-such-dns_sd.so.1")
        guard case .failure(.systemDiscoveryUnavailable(let detail)) = result else {
            Issue.record("expected systemDiscoveryUnavailable, got \(result)")
            return
        }
        #expect(detail.contains("libsf-no-such-dns_sd.so.1"))
        // A library without the DNS-SD functions names the first one missing.
        guard case .failure(.systemDiscoveryUnavailable(let missing)) = SystemDNSServiceLibrary.load("libc.so.6") else {
            Issue.record("libc.so.6 loaded as a DNS-SD library")
            return
        }
        #expect(missing.contains("DNSServiceRegister"))
    }

    @Test(
        "no reachable daemon is systemDaemonUnavailable, for browsing and advertising",
        .enabled(if: canLoadLibrary, Comment(rawValue: libraryReason)))
    func daemonMissing() throws {
        try #require(DiscoveryBackend.systemUnavailableReason == nil, Comment(rawValue: Self.libraryReason))
        let probe = try #require(DiscoveryPeers.probe, "sf-discovery-probe was not built beside the tests")
        let scratch = try ScratchDirectory("sf-no-bus")
        // A bus address where nothing listens: no daemon is reached, so nothing is sent anywhere.
        let environment = ["env", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(scratch.path("no-bus"))", "AVAHI_COMPAT_NOWARN=1"]
        let browse = try TestSupport.run(
            environment[0], Array(environment.dropFirst()) + [probe, "browse", "--interface", "lo", "--backend", "system", "--timeout", "2"])
        #expect(browse.status == 1)
        #expect(browse.stderrText.contains("DNS-SD daemon is not available"), "\(browse.stderrText)")
        let advertise = try TestSupport.run(
            environment[0],
            Array(environment.dropFirst()) + [probe, "advertise", "--interface", "lo", "--backend", "system", "--name", "X", "--port", "1"])
        #expect(advertise.status == 1)
        #expect(advertise.stderrText.contains("DNS-SD daemon is not available"), "\(advertise.stderrText)")
        // An interface that does not exist is reported as such before the daemon is asked.
        let noInterface = try TestSupport.run(
            environment[0], Array(environment.dropFirst()) + [probe, "browse", "--interface", "sf-none0", "--backend", "system"])
        #expect(noInterface.stderrText.contains("no network interface named sf-none0"), "\(noInterface.stderrText)")
    }

    @Test("a host name cannot be chosen with the system backend", .enabled(if: canLoadLibrary, Comment(rawValue: libraryReason)))
    func hostNameRefused() throws {
        try #require(DiscoveryBackend.systemUnavailableReason == nil, Comment(rawValue: Self.libraryReason))
        #expect(throws: ServiceDiscoveryError.self) {
            try ServiceAdvertiser(interface: "lo", instanceName: "X", port: 1, hostName: "other", backend: .system)
        }
    }

    @Test(
        "our .system advertiser is found by Python zeroconf and by our .builtIn browser; stopping withdraws it",
        .enabled(if: canRun, Comment(rawValue: reason)))
    func systemAdvertiser() throws {
        let probe = try requirements()
        let pair = try NamespacePair()
        defer { pair.remove() }
        let avahi = try NamespaceAvahi(pair: pair, namespace: pair.a, interface: pair.interfaceA, hostName: "sfavahi")
        let advertiser = try pair.spawn(
            in: pair.a,
            ["env"] + avahi.environment
                + [probe, "advertise", "--backend", "system", "--interface", pair.interfaceA, "--name", "SF Sys ü.1", "--port", "7100"]
                + Self.txtArguments)
        let advertised = try #require(advertiser.waitForEvent("advertised", timeout: 30), "not advertised: \(advertiser.standardError)")
        #expect(advertised["name"] as? String == "SF Sys ü.1")
        #expect(advertised["host"] as? String == "sfavahi.local.")
        #expect((advertised["addresses"] as? [String])?.filter(\.isIPv4) == [pair.addressA])

        // Our built-in querier in the other namespace.
        let resolved = try decode(
            try pair.run(
                in: pair.b,
                [probe, "browse", "--backend", "builtin", "--interface", pair.interfaceB, "--name", "SF Sys ü.1", "--timeout", "10"]
            ).stdoutText)
        let instance = try #require((resolved["instances"] as? [[String: Any]])?.first, "not resolved: \(resolved)")
        #expect(instance["name"] as? String == "SF Sys ü.1")
        #expect(instance["port"] as? Int == 7100)
        #expect(instance["host"] as? String == "sfavahi.local.")
        #expect((instance["addresses"] as? [String])?.filter(\.isIPv4) == [pair.addressA])
        #expect(instance["txt"] as? [String: String] == Self.txt)

        // Python zeroconf, watching until the registration is withdrawn.
        let watcher = try pair.spawn(
            in: pair.b,
            [DiscoveryPeers.python, DiscoveryPeers.peerScript("zeroconf_peer.py"), "browse", "--interface-ip", pair.addressB,
             "--name", "SF Sys ü.1", "--timeout", "15", "--wait-removed", "15"])
        let seen = try #require(watcher.waitForEvent("resolved", timeout: 30), "zeroconf did not resolve us: \(watcher.standardError)")
        let zeroconf = try #require(seen["instance"] as? [String: Any], "zeroconf did not resolve us: \(seen)")
        #expect(zeroconf["name"] as? String == "SF Sys ü.1._sf-channel._tcp.local.")
        #expect(zeroconf["server"] as? String == "sfavahi.local.")
        #expect(zeroconf["port"] as? Int == 7100)
        #expect((zeroconf["addresses"] as? [String])?.filter(\.isIPv4) == [pair.addressA])
        #expect(zeroconf["txt"] as? [String: String] == Self.txt)

        advertiser.finish()
        #expect(advertiser.waitForEvent("stopped", timeout: 10) != nil, "the advertiser did not stop: \(advertiser.standardError)")
        let done = try #require(watcher.waitForEvent("browsed", timeout: 30), "\(watcher.standardError)")
        #expect(done["removed"] as? Bool == true, "zeroconf did not see the registration withdrawn")
    }

    @Test(
        "auto takes the system daemon where it answers and the built-in responder where none does; each is found",
        .enabled(if: canRun, Comment(rawValue: reason)))
    func automaticChoice() throws {
        let probe = try requirements()
        let pair = try NamespacePair()
        defer { pair.remove() }
        let avahi = try NamespaceAvahi(pair: pair, namespace: pair.a, interface: pair.interfaceA, hostName: "sfauto")
        // Namespace A reaches avahi-daemon on its bus: auto advertises through it, and one
        // responder, avahi's, speaks for the host.
        let viaDaemon = try pair.spawn(
            in: pair.a,
            ["env"] + avahi.environment
                + [probe, "advertise", "--backend", "auto", "--interface", pair.interfaceA, "--name", "SF Auto Daemon", "--port", "7101"])
        let daemonEvent = try #require(viaDaemon.waitForEvent("advertised", timeout: 30), "not advertised: \(viaDaemon.standardError)")
        #expect(daemonEvent["backend"] as? String == "system")
        #expect(daemonEvent["host"] as? String == "sfauto.local.")  // avahi's host name: the daemon published it
        let found = try decode(
            try pair.run(
                in: pair.b,
                [probe, "browse", "--backend", "builtin", "--interface", pair.interfaceB, "--name", "SF Auto Daemon", "--timeout", "10"]
            ).stdoutText)
        let instance = try #require((found["instances"] as? [[String: Any]])?.first, "not resolved: \(found)")
        #expect(instance["port"] as? Int == 7101)
        viaDaemon.finish()
        #expect(viaDaemon.waitForEvent("stopped", timeout: 10) != nil, "\(viaDaemon.standardError)")

        // Namespace B reaches no daemon (a bus address where nothing listens): auto falls back to
        // the built-in responder, which avahi in namespace A finds.
        let scratch = try ScratchDirectory("sf-no-bus")
        let builtIn = try pair.spawn(
            in: pair.b,
            ["env", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(scratch.path("no-bus"))", probe, "advertise", "--backend", "auto",
             "--interface", pair.interfaceB, "--name", "SF Auto Builtin", "--port", "7102", "--host", "sfbuiltin"])
        let builtInEvent = try #require(builtIn.waitForEvent("advertised", timeout: 30), "not advertised: \(builtIn.standardError)")
        #expect(builtInEvent["backend"] as? String == "builtin")
        let seen = try pair.run(
            in: pair.a,
            ["env"] + avahi.environment
                + [probe, "browse", "--backend", "system", "--interface", pair.interfaceA, "--name", "SF Auto Builtin", "--timeout", "15"])
        #expect(seen.status == 0, "\(seen.stderrText)")
        let ours = try #require((try decode(seen.stdoutText)["instances"] as? [[String: Any]])?.first, "not resolved: \(seen.stdoutText)")
        #expect(ours["host"] as? String == "sfbuiltin.local.")
        #expect(ours["port"] as? Int == 7102)
        builtIn.finish()
    }

    @Test(
        "auto does not wait on a bus that accepts and never answers: it takes the built-in responder within its deadline",
        .enabled(if: canRun, Comment(rawValue: reason)))
    func automaticChoiceWithASilentBus() throws {
        let probe = try requirements()
        let pair = try NamespacePair()
        defer { pair.remove() }
        let scratch = try ScratchDirectory("sf-silent-bus")
        // A Unix socket (no network) that accepts every connection and never says a word: libdbus
        // would wait its 25 s reply timeout for the authentication exchange.
        let silentBus = try BackgroundProcess([
            DiscoveryPeers.python, "-c",
            """
            import json, socket, sys
            server = socket.socket(socket.AF_UNIX)
            server.bind(sys.argv[1])
            server.listen(16)
            print(json.dumps({"event": "listening"}), flush=True)
            held = []
            while True:
                held.append(server.accept()[0])
            """,
            scratch.path("bus"),
        ])
        defer { silentBus.kill() }
        _ = try #require(silentBus.waitForEvent("listening", timeout: 30), "the silent bus did not start: \(silentBus.standardError)")

        let advertiser = try pair.spawn(
            in: pair.b,
            ["env", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(scratch.path("bus"))", probe, "advertise", "--backend", "auto",
             "--interface", pair.interfaceB, "--name", "SF Auto Silent", "--port", "7103", "--host", "sfsilent"])
        // The detection deadline is 3 s; 20 s is well inside libdbus' 25 s, so only a bounded
        // probe gets here in time.
        let event = try #require(advertiser.waitForEvent("advertised", timeout: 20), "not advertised in time: \(advertiser.standardError)")
        #expect(event["backend"] as? String == "builtin")
        // And it is really advertised: our querier in the other namespace resolves it.
        let found = try decode(
            try pair.run(
                in: pair.a,
                [probe, "browse", "--backend", "builtin", "--interface", pair.interfaceA, "--name", "SF Auto Silent", "--timeout", "10"]
            ).stdoutText)
        let instance = try #require((found["instances"] as? [[String: Any]])?.first, "not resolved: \(found)")
        #expect(instance["port"] as? Int == 7103)
        // The abandoned probe, still blocked on the bus, does not keep the process from stopping.
        advertiser.finish()
        #expect(advertiser.waitForEvent("stopped", timeout: 10) != nil, "\(advertiser.standardError)")
    }

    @Test(
        "our .system browser finds a Python zeroconf registration and our .builtIn advertiser",
        .enabled(if: canRun, Comment(rawValue: reason)))
    func systemBrowser() throws {
        let probe = try requirements()
        let pair = try NamespacePair()
        defer { pair.remove() }
        let avahi = try NamespaceAvahi(pair: pair, namespace: pair.a, interface: pair.interfaceA, hostName: "sfavahi")
        let python = try pair.spawn(
            in: pair.b,
            [DiscoveryPeers.python, DiscoveryPeers.peerScript("zeroconf_peer.py"), "register", "--interface-ip", pair.addressB, "--name", "Py Peer",
             "--port", "9443", "--host", "pypeer", "--txt", "fp=abcdef", "--txt", "v=1", "--txt", "proto=Noise_IK_25519_AESGCM_SHA256"])
        _ = try #require(python.waitForEvent("registered", timeout: 30), "zeroconf did not register: \(python.standardError)")
        let builtIn = try pair.spawn(
            in: pair.b,
            [probe, "advertise", "--backend", "builtin", "--interface", pair.interfaceB, "--name", "Built-in Peer", "--port", "4434",
             "--host", "bob"] + Self.txtArguments)
        _ = try #require(builtIn.waitForEvent("advertised"), "\(builtIn.standardError)")

        func systemBrowse(_ arguments: [String]) throws -> [[String: Any]] {
            let result = try pair.run(
                in: pair.a, ["env"] + avahi.environment + [probe, "browse", "--backend", "system", "--interface", pair.interfaceA] + arguments)
            #expect(result.status == 0, "\(result.stderrText)")
            return try decode(result.stdoutText)["instances"] as? [[String: Any]] ?? []
        }

        let py = try #require(try systemBrowse(["--name", "Py Peer", "--timeout", "15"]).first, "Py Peer not resolved")
        #expect(py["name"] as? String == "Py Peer")
        #expect(py["host"] as? String == "pypeer.local.")
        #expect(py["port"] as? Int == 9443)
        #expect((py["addresses"] as? [String])?.filter(\.isIPv4) == [pair.addressB])
        #expect(py["txt"] as? [String: String] == ["fp": "abcdef", "v": "1", "proto": "Noise_IK_25519_AESGCM_SHA256"])

        let ours = try #require(try systemBrowse(["--name", "Built-in Peer", "--timeout", "15"]).first, "Built-in Peer not resolved")
        #expect(ours["host"] as? String == "bob.local.")
        #expect(ours["port"] as? Int == 4434)
        #expect((ours["addresses"] as? [String])?.filter(\.isIPv4) == [pair.addressB])
        #expect(ours["txt"] as? [String: String] == Self.txt)

        // A full browse lists both, sorted by name, with the same values.
        let all = try systemBrowse(["--timeout", "15"])  // the whole timeout: a backstop for a loaded machine
        #expect(all.map { $0["name"] as? String } == ["Built-in Peer", "Py Peer"])
        #expect(all.map { $0["port"] as? Int } == [4434, 9443])

        // An instance nobody advertises is notFound (an empty list from the probe) after the timeout.
        #expect(try systemBrowse(["--name", "Nobody", "--timeout", "2"]).isEmpty)
        builtIn.finish()
        python.finish()
    }
}

extension String {
    /// True for a dotted-quad address (avahi also publishes the veth's IPv6 link-local address).
    fileprivate var isIPv4: Bool { !contains(":") }
}
