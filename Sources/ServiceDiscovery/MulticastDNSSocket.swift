#if os(Linux)
import Glibc
import NIOCore
import NIOPosix

/// One UDP datagram received on the multicast DNS socket.
struct Datagram: Sendable {
    let bytes: [UInt8]
    let source: SocketAddress
}

/// A UDP socket on port 5353 bound to one network interface (`SO_BINDTODEVICE`), member of the
/// IPv4 mDNS group 224.0.0.251 on that interface only, sending multicast out of that interface
/// only (`IP_MULTICAST_IF`) with TTL 255 (RFC 6762 §11). Received datagrams are delivered through
/// a bounded stream (the newest 256 are kept when the reader falls behind).
final class MulticastDNSSocket: Sendable {
    static let port = 5353
    static let groupV4 = try! SocketAddress(ipAddress: "224.0.0.251", port: 5353)

    let channel: Channel
    let datagrams: AsyncStream<Datagram>
    /// The interface's addresses (IPv4 first), for A/AAAA records.
    let addresses: [IPAddress]
    let interfaceName: String
    /// The interface's IPv4 subnets as (network, mask) in host byte order.
    let subnets: [(network: UInt32, mask: UInt32)]

    private init(
        channel: Channel, datagrams: AsyncStream<Datagram>, addresses: [IPAddress], interfaceName: String,
        subnets: [(network: UInt32, mask: UInt32)]
    ) {
        self.channel = channel
        self.datagrams = datagrams
        self.addresses = addresses
        self.interfaceName = interfaceName
        self.subnets = subnets
    }

    /// True when `address` is an IPv4 address in one of the interface's subnets: only such
    /// sources get unicast replies (RFC 6762 §11), so an off-link host cannot make the responder
    /// send to a spoofed address.
    func isOnLink(_ address: SocketAddress) -> Bool {
        guard case .v4(let v4) = address else { return false }
        let value = UInt32(bigEndian: v4.address.sin_addr.s_addr)
        return subnets.contains { value & $0.mask == $0.network }
    }

    /// True when `address` is one of the interface's own addresses: a datagram from it is our own
    /// multicast looped back (or another socket of this host on the interface).
    func isOwnAddress(_ address: SocketAddress) -> Bool {
        guard let text = address.ipAddress, let ip = IPAddress(text) else { return false }
        return addresses.contains(ip)
    }

    static func subnets(of name: String) -> [(network: UInt32, mask: UInt32)] {
        guard let devices = try? System.enumerateDevices() else { return [] }
        return devices.filter { $0.name == name }.compactMap { device in
            guard case .v4(let address)? = device.address, case .v4(let mask)? = device.netmask else { return nil }
            let m = UInt32(bigEndian: mask.address.sin_addr.s_addr)
            return (UInt32(bigEndian: address.address.sin_addr.s_addr) & m, m)
        }
    }

    /// The addresses of interface `name`, IPv4 first; throws when there is no such interface or it
    /// has no IPv4 address.
    static func interfaceAddresses(_ name: String) throws(ServiceDiscoveryError) -> (v4: in_addr, device: NIONetworkDevice, all: [IPAddress]) {
        let devices: [NIONetworkDevice]
        do { devices = try System.enumerateDevices() } catch { throw .socket("cannot list interfaces: \(error)") }
        let matching = devices.filter { $0.name == name }
        guard !matching.isEmpty else { throw .interfaceNotFound(name) }
        var all = [IPAddress]()
        var v4: (in_addr, NIONetworkDevice)?
        for device in matching {
            switch device.address {
            case .v4(let address)?:
                if v4 == nil { v4 = (address.address.sin_addr, device) }
                if let text = device.address?.ipAddress, let ip = IPAddress(text) { all.append(ip) }
            case .v6?:
                if let text = device.address?.ipAddress, let ip = IPAddress(text) { all.append(ip) }
            default:
                break
            }
        }
        guard let (address, device) = v4 else { throw .interfaceHasNoIPv4Address(name) }
        return (address, device, all.sorted())
    }

    /// Opens the socket on interface `name`.
    static func open(interface name: String) async throws(ServiceDiscoveryError) -> MulticastDNSSocket {
        let (v4, device, addresses) = try interfaceAddresses(name)
        let (stream, continuation) = AsyncStream.makeStream(of: Datagram.self, bufferingPolicy: .bufferingNewest(256))
        let bootstrap = DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(DatagramForwarder(continuation: continuation))
                }
            }
        var bound: Channel?
        do {
            let channel = try await bootstrap.bind(host: "0.0.0.0", port: port).get()
            bound = channel
            guard let options = channel as? SocketOptionProvider, let multicast = channel as? MulticastChannel else {
                throw ServiceDiscoveryError.socket("channel lacks socket options")
            }
            var deviceName = [CChar](repeating: 0, count: 16)
            for (index, byte) in name.utf8.prefix(15).enumerated() { deviceName[index] = CChar(bitPattern: byte) }
            let ifname = InterfaceName(bytes: deviceName)
            try await options.unsafeSetSocketOption(
                level: .socket, name: NIOBSDSocket.Option(rawValue: SO_BINDTODEVICE), value: ifname.tuple
            ).get()
            try await options.setIPMulticastIF(v4).get()
            try await options.setIPMulticastTTL(255).get()
            try await options.setIPMulticastLoop(1).get()
            try await multicast.joinGroup(groupV4, device: device).get()
            return MulticastDNSSocket(
                channel: channel, datagrams: stream, addresses: addresses, interfaceName: name, subnets: subnets(of: name))
        } catch {
            try? await bound?.close()
            continuation.finish()
            if let error = error as? ServiceDiscoveryError { throw error }
            throw .socket("cannot open 0.0.0.0:5353 on \(name): \(error)")
        }
    }

    /// Sends `bytes` to the mDNS group (`nil`) or to one address.
    func send(_ bytes: [UInt8], to address: SocketAddress? = nil) async throws(ServiceDiscoveryError) {
        let buffer = channel.allocator.buffer(bytes: bytes)
        do {
            try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: address ?? Self.groupV4, data: buffer)).get()
        } catch {
            throw .socket("send failed: \(error)")
        }
    }

    /// Closes the socket; the datagram stream then ends.
    func close() async {
        try? await channel.close()
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

/// Passes each received datagram's bytes and source to an `AsyncStream`, and ends it when the
/// channel closes.
private final class DatagramForwarder: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    let continuation: AsyncStream<Datagram>.Continuation

    init(continuation: AsyncStream<Datagram>.Continuation) { self.continuation = continuation }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = Self.unwrapInboundIn(data)
        continuation.yield(Datagram(bytes: Array(envelope.data.readableBytesView), source: envelope.remoteAddress))
    }

    func channelInactive(context: ChannelHandlerContext) {
        continuation.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A failed receive (for example an ICMP error) must not close the responder.
    }
}
#endif
