import Foundation
import SFTestSupport

@testable import ServiceDiscovery

/// avahi-daemon inside one namespace of a test's `NamespacePair`, on a private D-Bus system bus:
/// a dbus-daemon whose configuration allows everything and listens on a socket in a scratch
/// directory, and an avahi-daemon limited to the namespace's veth (IPv4 only, no workstation or
/// HINFO records, no wide-area) with a tmpfs over /run inside the namespace's own mount
/// namespace (`ip netns exec` makes one), so its pid file never meets another instance's and the
/// host's /run is untouched. Both run as children of the pair and end with it; nothing runs on the
/// host's interfaces.
final class NamespaceAvahi: @unchecked Sendable {
    /// A daemon that did not start, with its error output.
    struct StartError: Error, CustomStringConvertible {
        let description: String
    }

    let scratch: ScratchDirectory
    /// `DBUS_SYSTEM_BUS_ADDRESS` for clients of this daemon.
    let busAddress: String

    /// The environment a DNS-SD client of this daemon runs with (`env` arguments).
    var environment: [String] { ["DBUS_SYSTEM_BUS_ADDRESS=\(busAddress)", "AVAHI_COMPAT_NOWARN=1"] }

    /// Nil when avahi-daemon, dbus-daemon and Avahi's libdns_sd are installed; otherwise why not.
    static let unavailableReason: String? = {
        for program in ["avahi-daemon", "dbus-daemon"] where TestSupport.which(program) == nil {
            return "\(program) is not installed (apt-get install avahi-daemon dbus libavahi-compat-libdnssd1); system DNS-SD tests skipped"
        }
        if let reason = DiscoveryBackend.systemUnavailableReason { return "\(reason); system DNS-SD tests skipped" }
        return nil
    }()

    /// Starts dbus-daemon and avahi-daemon in `namespace` of `pair` on `interface`, publishing the
    /// host name `hostName`, and waits until avahi-daemon reports its startup complete.
    init(pair: NamespacePair, namespace: String, interface: String, hostName: String) throws {
        scratch = try ScratchDirectory("sf-avahi")
        let socket = scratch.path("bus")
        busAddress = "unix:path=\(socket)"
        let busConfig = try scratch.write(
            "bus.conf",
            """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>\(busAddress)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_type="method_call"/>
                <allow send_type="method_return"/>
                <allow send_type="error"/>
                <allow send_type="signal"/>
                <allow receive_type="method_call"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
                <allow receive_type="signal"/>
              </policy>
            </busconfig>
            """)
        let avahiConfig = try scratch.write(
            "avahi.conf",
            """
            [server]
            host-name=\(hostName)
            use-ipv4=yes
            use-ipv6=no
            allow-interfaces=\(interface)
            enable-dbus=yes
            ratelimit-interval-usec=1000000
            ratelimit-burst=1000
            [wide-area]
            enable-wide-area=no
            [publish]
            publish-hinfo=no
            publish-workstation=no
            [reflector]
            [rlimits]

            """)
        let bus = try pair.spawn(in: namespace, Self.supervised(["dbus-daemon", "--config-file=\(busConfig)", "--nofork", "--nopidfile"]))
        guard bus.wait(timeout: 60, until: { _ in FileManager.default.fileExists(atPath: socket) }) else {
            throw StartError(description: "dbus-daemon did not start: \(bus.standardError)")
        }
        let avahi = try pair.spawn(
            in: namespace,
            ["env", "DBUS_SYSTEM_BUS_ADDRESS=\(busAddress)"]
                + Self.supervised(
                    ["avahi-daemon", "-f", avahiConfig, "--no-drop-root", "--no-chroot", "--no-rlimits", "--no-proc-title"],
                    setup: "mount -t tmpfs sf-avahi-run /run && mkdir -p /run/avahi-daemon"))
        guard avahi.wait(timeout: 60, until: { $0.standardError.contains("Server startup complete") || !$0.isRunning }),
            avahi.isRunning
        else {
            throw StartError(description: "avahi-daemon did not start: \(avahi.standardError)")
        }
    }

    /// Tests/peers/daemon_supervisor.py running `setup` (with sh) and then `daemon` until the
    /// supervisor's standard input closes (`BackgroundProcess.kill()` closes it first); the script's
    /// header says why the daemons are not the test's direct children.
    static func supervised(_ daemon: [String], setup: String? = nil) -> [String] {
        [DiscoveryPeers.python, DiscoveryPeers.peerScript("daemon_supervisor.py")] + (setup.map { ["--setup", $0] } ?? []) + ["--"] + daemon
    }
}
