import Foundation
import NIOCore

extension SecureChannel {
    /// TCP keepalive for a connection: after `idle` with nothing received, the kernel sends a probe
    /// every `interval`, and after `probes` unanswered ones the connection fails with
    /// `SecureChannelError.peerUnresponsive` (or `closedBeforeEndOfStream`, when a probe meets a
    /// reset). So a peer that vanished without closing (powered off, unplugged, its network gone, a
    /// NAT that forgot the connection) ends a connection that would otherwise wait for it forever.
    /// Probes are sent only while nothing is in flight: with data unacknowledged, the system's
    /// retransmission timeout ends it instead (about 15 minutes on Linux). No `TCP_USER_TIMEOUT` is
    /// set: since Linux 5.11 it also ends a connection whose live peer keeps its receive window
    /// shut that long (a slow reader under backpressure).
    ///
    /// A peer that is alive but sends and reads nothing answers every probe: that is an idle
    /// connection, which only the application can time out.
    public struct Keepalive: Sendable, Equatable {
        /// Silence before the first probe; whole seconds, at least 1.
        public var idle: TimeAmount
        /// Time between probes; whole seconds, at least 1.
        public var interval: TimeAmount
        /// Unanswered probes after which the connection fails; 1 to 127.
        public var probes: Int

        /// Probes after 60 s of silence, every 10 s, 6 of them: an idle peer that vanished is noticed within two minutes.
        public init(idle: TimeAmount = .seconds(60), interval: TimeAmount = .seconds(10), probes: Int = 6) {
            self.idle = idle
            self.interval = interval
            self.probes = probes
        }

        /// The longest a vanished peer goes unnoticed on an idle connection: `idle + interval ×
        /// probes` (as applied).
        public var deadline: TimeAmount {
            .seconds(Self.seconds(idle) + Self.seconds(interval) * Int64(Self.probeCount(probes)))
        }

        /// Sets the socket options on a connection's channel (on its event loop, before it connects).
        func apply(to channel: any Channel) throws {
            guard let options = channel.syncOptions else { return }
            try options.setOption(.socketOption(.so_keepalive), value: 1)
            #if canImport(Darwin)
            let idleOption = TCP_KEEPALIVE
            #else
            let idleOption = TCP_KEEPIDLE
            #endif
            try options.setOption(.tcpOption(.init(rawValue: idleOption)), value: SocketOptionValue(Self.seconds(idle)))
            try options.setOption(.tcpOption(.init(rawValue: TCP_KEEPINTVL)), value: SocketOptionValue(Self.seconds(interval)))
            try options.setOption(.tcpOption(.init(rawValue: TCP_KEEPCNT)), value: SocketOptionValue(Self.probeCount(probes)))
        }

        /// Whole seconds, rounded up, from 1 to 32,767 (Linux's `MAX_TCP_KEEPIDLE`).
        private static func seconds(_ amount: TimeAmount) -> Int64 {
            min(max((amount.nanoseconds + 999_999_999) / 1_000_000_000, 1), 32_767)
        }

        private static func probeCount(_ probes: Int) -> Int { min(max(probes, 1), 127) }
    }
}
