import Testing

@testable import ServiceDiscovery

@Suite("DNS-SD names")
struct NamingTests {
    @Test("service types: valid forms and the default")
    func validTypes() throws {
        #expect(ServiceType.secureChannel.description == "_sf-channel._tcp.local.")
        #expect(try ServiceType("_sf-channel._tcp") == .secureChannel)
        #expect(try ServiceType("_sf-channel._tcp.local.") == .secureChannel)
        #expect(try ServiceType("_sf-channel._TCP.local") == .secureChannel)
        #expect(try ServiceType("_ipp._udp").transport == "udp")
        #expect(try ServiceType("_a123456789abcde._tcp").service.count == 15)
    }

    @Test("service types: invalid forms are refused", arguments: [
        "sf-channel._tcp", "_sf-channel.tcp", "_sf-channel._sctp", "_._tcp", "_-sf._tcp", "_sf-._tcp", "_sf--channel._tcp",
        "_1234._tcp", "_a123456789abcdef._tcp", "_sf channel._tcp", "_sf_channel._tcp", "_sf-channel._tcp.example.com.",
        "_sf-channel", "", "_sf-chännel._tcp",
    ])
    func invalidTypes(text: String) {
        #expect(throws: ServiceDiscoveryError.self) { try ServiceType(text) }
    }

    @Test("instance names: UTF-8 up to 63 bytes, dots kept on the wire and escaped in text")
    func instanceNames() throws {
        let dotted = try ServiceInstanceName("Living Room.TV \\ 2")
        let full = dotted.fullName(type: .secureChannel)
        #expect(full.labels.count == 4)
        #expect(full.labels[0] == Array("Living Room.TV \\ 2".utf8))
        #expect(full.description == "Living Room\\.TV \\\\ 2._sf-channel._tcp.local.")
        #expect(try DNSName(full.description) == full)
        _ = try ServiceInstanceName(String(repeating: "é", count: 31) + "x")  // 63 bytes
        #expect(throws: ServiceDiscoveryError.self) { try ServiceInstanceName(String(repeating: "é", count: 32)) }  // 64 bytes
        #expect(throws: ServiceDiscoveryError.self) { try ServiceInstanceName("") }
        #expect(throws: ServiceDiscoveryError.self) { try ServiceInstanceName("tab\there") }
        #expect(throws: ServiceDiscoveryError.self) { try ServiceInstanceName("del\u{7F}") }
    }

    @Test("a renamed instance or host label stays within 63 bytes, however many renames")
    func renaming() throws {
        #expect(ServiceAdvertiser.renamed("Printer", suffix: " (2)") == "Printer (2)")
        let long = String(repeating: "ü", count: 31)  // 62 bytes
        let renamed = ServiceAdvertiser.renamed(long, suffix: " (10)")
        #expect(renamed.utf8.count <= 63 && renamed.hasSuffix(" (10)"))
        // A host label of 63 bytes renamed for the 10,000th time (it kept 58 bytes before the
        // suffix: 64 bytes, refused, and re-probing stopped for good without a word).
        let host = ServiceAdvertiser.renamed(String(repeating: "h", count: 63), suffix: "-10000")
        #expect(host.utf8.count == 63 && host.hasSuffix("-10000"))
        _ = try ServiceRecords(
            instance: try ServiceInstanceName("Printer"), type: .secureChannel, hostLabel: host, port: 1, txt: TXTRecord(), addresses: [])
    }

    @Test("host labels are validated")
    func hostLabels() throws {
        let txt = TXTRecord()
        let instance = try ServiceInstanceName("x")
        for bad in ["", "-a", "a-", "a.b", "a_b", String(repeating: "a", count: 64)] {
            #expect(throws: ServiceDiscoveryError.invalidHostName(bad)) {
                try ServiceRecords(instance: instance, type: .secureChannel, hostLabel: bad, port: 1, txt: txt, addresses: [])
            }
        }
        #expect(ServiceAdvertiser.defaultHostLabel().utf8.count <= 63)
        #expect(!ServiceAdvertiser.defaultHostLabel().isEmpty)
    }

    @Test("IP addresses parse and print")
    func addresses() {
        #expect(IPAddress("192.0.2.1")?.description == "192.0.2.1")
        #expect(IPAddress("FE80:0:0::1")?.description == "fe80::1")
        #expect(IPv6Address("fe80::1")!.isLinkLocal)
        #expect(IPAddress("192.0.2") == nil)
        #expect(IPAddress("192.0.2.1")! < IPAddress("::1")!)
    }
}

#if os(Linux)
@Suite("advertiser and browser argument errors (no packets sent)")
struct LocalErrorTests {
    @Test("an unknown interface is a typed error before any socket is opened")
    func unknownInterface() async throws {
        let advertiser = try ServiceAdvertiser(interface: "sf-no-such0", instanceName: "x", port: 1, hostName: "h")
        await #expect(throws: ServiceDiscoveryError.interfaceNotFound("sf-no-such0")) { try await advertiser.start() }
        await #expect(throws: ServiceDiscoveryError.invalidState("the advertiser was already started")) { try await advertiser.start() }
        let browser = ServiceBrowser(interface: "sf-no-such0")
        await #expect(throws: ServiceDiscoveryError.interfaceNotFound("sf-no-such0")) { try await browser.browse(timeout: .seconds(1)) }
        #expect(throws: ServiceDiscoveryError.self) { try ServiceAdvertiser(interface: "lo", instanceName: "", port: 1) }
        #expect(throws: ServiceDiscoveryError.self) { try ServiceAdvertiser(interface: "lo", instanceName: "x", port: 1, hostName: "bad_host") }
    }
}
#endif
