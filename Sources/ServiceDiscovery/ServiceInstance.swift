/// A resolved DNS-SD service instance: what a browser learned from the network. Every field is
/// untrusted input; a peer found this way must still be authenticated (by the SecureChannel
/// handshake) before anything it says is believed.
public struct ServiceInstance: Hashable, Sendable {
    /// The instance name (the first label, unescaped).
    public let name: String
    /// The service type.
    public let type: ServiceType
    /// The target host from the SRV record.
    public let host: DNSName
    /// The host's addresses from A and AAAA records, sorted, IPv4 first. An IPv6 link-local address
    /// (`fe80::/10`) is only usable together with the interface it was discovered on.
    public let addresses: [IPAddress]
    /// The port from the SRV record.
    public let port: UInt16
    /// The TXT attributes.
    public let txt: TXTRecord

    /// Creates an instance description.
    public init(name: String, type: ServiceType, host: DNSName, addresses: [IPAddress], port: UInt16, txt: TXTRecord) {
        self.name = name
        self.type = type
        self.host = host
        self.addresses = addresses.sorted()
        self.port = port
        self.txt = txt
    }
}
