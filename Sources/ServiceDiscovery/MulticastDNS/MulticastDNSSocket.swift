#if os(Linux)
import Glibc
import NIOCore
import NIOPosix
import Synchronization

/// One UDP datagram received on the multicast DNS socket.
struct Datagram: Sendable {
    let bytes: [UInt8]
    let source: SocketAddress
    /// Whether it was sent to the mDNS group (224.0.0.251, ff02::fb), which routers do not
    /// forward, rather than to one of our addresses: false when the kernel did not say.
    let toGroup: Bool

    /// The family the datagram arrived on.
    var family: IPFamilies { source.protocol == .inet6 ? .ipv6 : .ipv4 }
}

/// UDP sockets on port 5353 bound to one network interface (`SO_BINDTODEVICE`), one per family
/// asked for: IPv4, member of 224.0.0.251 on that interface only, sending out of it only
/// (`IP_MULTICAST_IF`) with TTL 255; IPv6 (`IPV6_V6ONLY`), member of ff02::fb on that interface
/// (`IPV6_JOIN_GROUP` with its index), sending out of it (`IPV6_MULTICAST_IF`) with hop limit 255
/// (RFC 6762 §11, §20). Datagrams of both are delivered through one bounded stream (the newest 256
/// are kept when the reader falls behind).
final class MulticastDNSSocket: Sendable {
    static let port = 5353
    static let groupV4 = try! SocketAddress(ipAddress: "224.0.0.251", port: 5353)
    static let groupV6 = try! SocketAddress(ipAddress: "ff02::fb", port: 5353)

    /// The IPv4 and IPv6 channels; at least one is open.
    let v4: Channel?
    let v6: Channel?
    let datagrams: AsyncStream<Datagram>
    let interfaceName: String
    /// The interface's addresses and prefixes as last read (`refreshAddresses`).
    private let addressing: Mutex<Addressing>
    private let continuation: AsyncStream<Datagram>.Continuation

    /// The interface's addresses (sorted), for A/AAAA records, and its IPv4 subnets and IPv6
    /// prefixes, for the on-link check, with when they were read.
    private struct Addressing: Sendable {
        var addresses: [IPAddress]
        var link: LinkPrefixes
        var readAt: ContinuousClock.Instant
    }

    /// The interface's addresses (sorted) as last read, for A/AAAA records.
    var addresses: [IPAddress] { addressing.withLock { $0.addresses } }

    private init(
        v4: Channel?, v6: Channel?, datagrams: AsyncStream<Datagram>, continuation: AsyncStream<Datagram>.Continuation, interface: Interface
    ) {
        self.v4 = v4
        self.v6 = v6
        self.datagrams = datagrams
        self.continuation = continuation
        self.interfaceName = interface.name
        self.addressing = Mutex(Addressing(addresses: interface.addresses, link: interface.link, readAt: .now))
    }

    /// Reads the interface's addresses and prefixes again, unless they were read less than
    /// `age` ago. An interface that is gone or cannot be read keeps what was read before. The
    /// interface may be renumbered while the socket is open (DHCP, a new prefix, an address moved):
    /// the advertiser then announces its new addresses, and the on-link check uses the new prefixes.
    func refreshAddresses(ifOlderThan age: Duration = .zero) {
        let now = ContinuousClock.now
        // The read is claimed first, so that concurrent callers, and a read that fails, do not
        // read again within `age`; an older read finishing late does not replace a newer one.
        let claimed = addressing.withLock { addressing in
            guard now - addressing.readAt >= age else { return false }
            addressing.readAt = now
            return true
        }
        guard claimed, let interface = try? Self.interface(interfaceName) else { return }
        addressing.withLock { addressing in
            guard addressing.readAt <= now else { return }
            addressing = Addressing(addresses: interface.addresses, link: interface.link, readAt: now)
        }
    }

    /// True when `address` is on the interface's link: an IPv4 address in one of its subnets, a
    /// link-local address (IPv4 169.254/16, IPv6 fe80::/10: never routed, and the socket is bound
    /// to the interface, so it came over this link) or an IPv6 address in one of its on-link
    /// prefixes. Only such sources get unicast replies (RFC
    /// 6762 §11), so an off-link host cannot make the responder send to a spoofed address.
    /// An address off the prefixes as last read makes them be read again (at most once a second),
    /// so that a renumbered interface's new link is known.
    func isOnLink(_ address: SocketAddress) -> Bool {
        guard let text = address.ipAddress, let ip = IPAddress(text) else { return false }
        if addressing.withLock({ $0.link.contains(ip) }) { return true }
        refreshAddresses(ifOlderThan: .seconds(1))
        return addressing.withLock { $0.link.contains(ip) }
    }

    /// True when `address` is one of the interface's own addresses: a datagram from it is our own
    /// multicast looped back (or another socket of this host on the interface).
    func isOwnAddress(_ address: SocketAddress) -> Bool {
        guard let text = address.ipAddress, let ip = IPAddress(text) else { return false }
        return addressing.withLock { $0.addresses.contains(ip) }
    }

    /// What the socket needs to know about one interface.
    struct Interface {
        let name: String
        let index: Int
        /// The device entry of its first IPv6 address (for joining the IPv6 group).
        var v6: NIONetworkDevice?
        var addresses = [IPAddress]()
        var link = LinkPrefixes()

        /// Whether the interface has an IPv4 address.
        var hasIPv4: Bool { addresses.contains(where: \.isIPv4) }
    }

    /// The addresses and prefixes of interface `name`; throws `interfaceNotFound` when there is
    /// no such interface.
    static func interface(_ name: String) throws(ServiceDiscoveryError) -> Interface {
        let devices: [NIONetworkDevice]
        do { devices = try System.enumerateDevices() } catch { throw .socket("cannot list interfaces: \(error)") }
        let matching = devices.filter { $0.name == name }
        guard let first = matching.first else { throw .interfaceNotFound(name) }
        var result = Interface(name: name, index: first.interfaceIndex)
        let unusable = unusableIPv6Addresses(interfaceIndex: first.interfaceIndex)
        for device in matching {
            guard let text = device.address?.ipAddress, let ip = IPAddress(text) else { continue }
            let mask = device.netmask?.ipAddress.flatMap(IPAddress.init)
            if case .v6? = device.address, result.v6 == nil { result.v6 = device }
            if let mask { result.link.add(ip, mask: mask) }
            // Its prefix is on the link all the same; the address is not ours to announce yet.
            if !unusable.contains(ip) { result.addresses.append(ip) }
        }
        result.addresses.sort()
        return result
    }

    /// The IPv6 addresses of the interface with index `interfaceIndex` that the kernel does not
    /// let anyone use (`/proc/net/if_inet6`): still tentative (duplicate address detection, RFC
    /// 4862 §5.4, has not ended) or found duplicate (DAD failed: another host on the link holds
    /// it). `getifaddrs` lists them like any other; announcing one would send peers to an address
    /// that is not, or not yet, ours. They are announced once DAD succeeds (the advertiser reads
    /// the addresses again every 2 s). Empty when the file cannot be read.
    static func unusableIPv6Addresses(interfaceIndex: Int) -> Set<IPAddress> {
        let descriptor = Glibc.open("/proc/net/if_inet6", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        defer { Glibc.close(descriptor) }
        var contents = [UInt8](), chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            contents += chunk[0..<count]
        }
        return parseUnusableIPv6Addresses(String(decoding: contents, as: UTF8.self), interfaceIndex: interfaceIndex)
    }

    /// `unusableIPv6Addresses` of the text of `/proc/net/if_inet6`: one line per address, its 32
    /// hex digits, then in hex the interface index, prefix length, scope and flags, then the
    /// interface name. Unusable: `IFA_F_DADFAILED` (0x08), or `IFA_F_TENTATIVE` (0x40) without
    /// `IFA_F_OPTIMISTIC` (0x04: optimistic DAD, RFC 4429, lets the address be used while DAD
    /// runs). Lines that do not parse are skipped.
    static func parseUnusableIPv6Addresses(_ text: String, interfaceIndex: Int) -> Set<IPAddress> {
        let tentative: UInt32 = 0x40, dadFailed: UInt32 = 0x08, optimistic: UInt32 = 0x04
        var unusable = Set<IPAddress>()
        for line in text.split(separator: "\n") {
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            guard columns.count >= 5, columns[0].utf8.count == 32, Int(columns[1], radix: 16) == interfaceIndex,
                let flags = UInt32(columns[4], radix: 16), flags & dadFailed != 0 || (flags & tentative != 0 && flags & optimistic == 0)
            else { continue }
            let hex = Array(columns[0].utf8)
            var bytes = [UInt8]()
            for i in stride(from: 0, to: 32, by: 2) {
                guard let byte = UInt8(String(decoding: hex[i..<i + 2], as: UTF8.self), radix: 16) else { break }
                bytes.append(byte)
            }
            if let address = IPv6Address(bytes: bytes) { unusable.insert(.v6(address)) }
        }
        return unusable
    }

    /// Opens the sockets of `families` on interface `name`. A single family asked for needs an
    /// address of it on the interface. With both, the interface needs an address of either; the
    /// IPv4 socket is opened even while the interface has no IPv4 address (it joins the group by
    /// the interface's index), so that one the interface gets later (DHCP after the link came up)
    /// is served, and an IPv6 socket that cannot be opened is left out as long as IPv4 opens.
    static func open(interface name: String, families: IPFamilies = .all) async throws(ServiceDiscoveryError) -> MulticastDNSSocket {
        let info = try Self.interface(name)
        if families == .ipv6, info.v6 == nil { throw .interfaceHasNoIPv6Address(name) }
        if !families.contains(.ipv6) || info.v6 == nil, !info.hasIPv4 { throw .interfaceHasNoIPv4Address(name) }
        let (stream, continuation) = AsyncStream.makeStream(of: Datagram.self, bufferingPolicy: .bufferingNewest(256))
        let wantV6 = families.contains(.ipv6) && info.v6 != nil
        var v4: Channel?, v6: Channel?
        do throws(ServiceDiscoveryError) {
            if families.contains(.ipv4) {
                v4 = try await openV4(interface: info, continuation: continuation)
            }
            if wantV6, let device = info.v6 {
                do throws(ServiceDiscoveryError) {
                    v6 = try await openV6(interface: info, device: device, continuation: continuation)
                } catch {
                    // With IPv4 open and both families asked for, IPv6 is optional.
                    guard v4 != nil, families.contains(.ipv4) else { throw error }
                }
            }
        } catch {
            try? await v4?.close()
            try? await v6?.close()
            continuation.finish()
            throw error
        }
        return MulticastDNSSocket(v4: v4, v6: v6, datagrams: stream, continuation: continuation, interface: info)
    }

    private static func bootstrap(_ continuation: AsyncStream<Datagram>.Continuation, v6Only: Bool) -> DatagramBootstrap {
        var bootstrap = DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
            // Whole datagrams up to the codec's limit (NIO's default reads 2048 bytes and drops the
            // rest); one byte more, so a larger one is refused as too large, not read cut short.
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: DNSMessage.maximumSize + 1))
        if v6Only {
            bootstrap = bootstrap.channelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1)
        }
        return bootstrap.channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(DatagramForwarder(continuation: continuation))
            }
        }
    }

    private static func bindToDevice(_ options: SocketOptionProvider, _ name: String) async throws {
        var deviceName = [CChar](repeating: 0, count: 16)
        for (index, byte) in name.utf8.prefix(15).enumerated() { deviceName[index] = CChar(bitPattern: byte) }
        try await options.unsafeSetSocketOption(
            level: .socket, name: NIOBSDSocket.Option(rawValue: SO_BINDTODEVICE), value: InterfaceName(bytes: deviceName).tuple
        ).get()
    }

    private static func openV4(interface: Interface, continuation: AsyncStream<Datagram>.Continuation) async throws(ServiceDiscoveryError) -> Channel {
        var bound: Channel?
        do {
            let channel = try await bootstrap(continuation, v6Only: false).bind(host: "0.0.0.0", port: port).get()
            bound = channel
            guard let options = channel as? SocketOptionProvider else { throw ServiceDiscoveryError.socket("channel lacks socket options") }
            try await bindToDevice(options, interface.name)
            try await channel.setOption(.receivePacketInfo, value: true).get()  // (after the bind: it needs the family)
            // By the interface's index, not its address: the address may be removed while the
            // socket is open, and a source address no longer ours makes every send fail.
            var outgoing = ip_mreqn()
            outgoing.imr_ifindex = Int32(interface.index)
            try await options.unsafeSetSocketOption(level: .ip, name: .ip_multicast_if, value: outgoing).get()
            try await options.setIPMulticastTTL(255).get()
            try await options.setIPMulticastLoop(1).get()
            // The group is joined by the interface's index too: no address of it is needed.
            var membership = ip_mreqn()
            membership.imr_multiaddr.s_addr = inet_addr("224.0.0.251")
            membership.imr_ifindex = Int32(interface.index)
            try await options.unsafeSetSocketOption(level: .ip, name: .ip_add_membership, value: membership).get()
            return channel
        } catch {
            try? await bound?.close()
            if let error = error as? ServiceDiscoveryError { throw error }
            throw .socket("cannot open 0.0.0.0:5353 on \(interface.name): \(error)")
        }
    }

    private static func openV6(
        interface: Interface, device: NIONetworkDevice, continuation: AsyncStream<Datagram>.Continuation
    ) async throws(ServiceDiscoveryError) -> Channel {
        var bound: Channel?
        do {
            let channel = try await bootstrap(continuation, v6Only: true).bind(host: "::", port: port).get()
            bound = channel
            guard let options = channel as? SocketOptionProvider, let multicast = channel as? MulticastChannel else {
                throw ServiceDiscoveryError.socket("channel lacks socket options")
            }
            try await bindToDevice(options, interface.name)
            try await channel.setOption(.receivePacketInfo, value: true).get()  // (after the bind: it needs the family)
            try await options.setIPv6MulticastIF(CUnsignedInt(interface.index)).get()
            try await options.setIPv6MulticastHops(255).get()
            try await options.setIPv6MulticastLoop(1).get()
            try await multicast.joinGroup(groupV6, device: device).get()
            return channel
        } catch {
            try? await bound?.close()
            if let error = error as? ServiceDiscoveryError { throw error }
            throw .socket("cannot open [::]:5353 on \(interface.name): \(error)")
        }
    }

    /// Sends `bytes` to one address (over the socket of its family), or with `address` nil to the
    /// mDNS group of each family in `families` that has a socket. Throws only when nothing could
    /// be sent (one family may fail, e.g. while the interface's IPv6 address is still tentative).
    func send(_ bytes: [UInt8], to address: SocketAddress? = nil, families: IPFamilies = .all) async throws(ServiceDiscoveryError) {
        var targets = [(Channel, SocketAddress)]()
        if let address {
            if let channel = address.protocol == .inet6 ? v6 : v4 { targets.append((channel, address)) }
        } else {
            // Only over a family the interface has an address of now: without one, the kernel
            // would take another interface's address as the source.
            let hasIPv4 = addresses.contains(where: \.isIPv4)
            if families.contains(.ipv4), let v4, hasIPv4 { targets.append((v4, Self.groupV4)) }
            if families.contains(.ipv6), let v6 { targets.append((v6, Self.groupV6)) }
        }
        var failure: (any Error)?
        var sent = false
        for (channel, destination) in targets {
            do {
                try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: destination, data: channel.allocator.buffer(bytes: bytes))).get()
                sent = true
            } catch {
                failure = error
            }
        }
        guard sent else { throw .socket("send failed: \(failure.map { "\($0)" } ?? "no socket of the destination's family")") }
    }

    /// Closes the sockets; the datagram stream then ends.
    func close() async {
        try? await v4?.close()
        try? await v6?.close()
        continuation.finish()
    }
}

extension IPAddress {
    /// Whether this is an IPv4 address.
    var isIPv4: Bool { if case .v4 = self { true } else { false } }
}

/// The on-link test of RFC 6762 §11 for one interface: its IPv4 subnets and IPv6 prefixes.
struct LinkPrefixes: Sendable {
    /// (network, mask) pairs, bytes in network order, 4 bytes for IPv4 and 16 for IPv6.
    private(set) var prefixes = [(network: [UInt8], mask: [UInt8])]()

    /// Adds the prefix of `address` with netmask `mask` (both of one family).
    mutating func add(_ address: IPAddress, mask: IPAddress) {
        let (a, m) = (address.bytes, mask.bytes)
        guard a.count == m.count else { return }
        prefixes.append((zip(a, m).map { $0 & $1 }, m))
    }

    /// True for a link-local address (IPv6 fe80::/10, IPv4 169.254/16: routers never forward
    /// them, RFC 4291, RFC 3927 §7), or an address inside one of the prefixes.
    func contains(_ address: IPAddress) -> Bool {
        if case .v6(let v6) = address, v6.isLinkLocal { return true }
        if case .v4(let v4) = address, v4.bytes[0] == 169, v4.bytes[1] == 254 { return true }
        let bytes = address.bytes
        return prefixes.contains { prefix in
            prefix.network.count == bytes.count && zip(zip(bytes, prefix.mask), prefix.network).allSatisfy { $0.0 & $0.1 == $1 }
        }
    }
}

/// `IFNAMSIZ` bytes for `SO_BINDTODEVICE`, as a fixed-size value the option setter can copy.
private struct InterfaceName: Sendable {
    typealias Tuple = (
        CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar
    )
    let tuple: Tuple

    init(bytes b: [CChar]) {
        tuple = (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
    }
}

/// Passes each received datagram's bytes and source to the stream shared by the socket's
/// channels (`MulticastDNSSocket.close()` ends it).
private final class DatagramForwarder: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    let continuation: AsyncStream<Datagram>.Continuation

    init(continuation: AsyncStream<Datagram>.Continuation) { self.continuation = continuation }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = Self.unwrapInboundIn(data)
        let destination = envelope.metadata?.packetInfo?.destinationAddress.ipAddress
        let toGroup = destination == MulticastDNSSocket.groupV4.ipAddress || destination == MulticastDNSSocket.groupV6.ipAddress
        continuation.yield(Datagram(bytes: Array(envelope.data.readableBytesView), source: envelope.remoteAddress, toGroup: toGroup))
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A failed receive (for example an ICMP error) must not close the responder.
    }
}
#endif
