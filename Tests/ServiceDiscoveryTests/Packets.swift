import SFTestSupport
import ServiceDiscovery
import Foundation

/// Hand-assembled packets in the shape of real mDNS traffic, written byte by byte from the RFCs
/// (not produced by the codec under test).
enum Packets {
    /// An mDNS response announcing "My Printer._http._tcp.local." (the RFC 6763 §4.1 example type)
    /// with compressed names: PTR, SRV (cache-flush, target printer.local. compressed into
    /// "local"), TXT (with a duplicate key, a boolean and an empty key) and A 192.0.2.5.
    static let printerResponse = Data(hexString: [
        "0000 8400 0000 0004 0000 0000",  // header: response, AA, 4 answers
        // offset 12: _http._tcp.local. PTR -> My Printer (label at 40) + pointer to 12
        "055f68747470 045f746370 056c6f63616c 00", "000c 0001 00001194 000d",
        "0a4d79205072696e746572 c00c",
        // offset 53: SRV, name -> 40, cache-flush class, TTL 120, port 631, target printer + ->23 (local)
        "c028 0021 8001 00000078 0010", "0000 0000 0277", "077072696e746572 c017",
        // offset 81: TXT, name -> 40, 56 bytes of strings
        "c028 0010 8001 00001194 0038",
        "09" + hex("txtvers=1"), "1a" + hex("pdl=application/postscript"), "05" + hex("Color"),
        "07" + hex("PDL=dup"), "04" + hex("=bad"),
        // offset 149: A for printer.local. (label at 71), 192.0.2.5
        "c047 0001 8001 00000078 0004 c0000205",
    ].joined().replacingOccurrences(of: " ", with: ""))

    /// A DNS-SD browse query (RFC 6763 §4.1): one PTR question for _http._tcp.local., QM.
    static let browseQuery = Data(hexString: [
        "0000 0000 0001 0000 0000 0000",
        "055f68747470 045f746370 056c6f63616c 00 000c 0001",
    ].joined().replacingOccurrences(of: " ", with: ""))

    /// A probe (RFC 6762 §8.1): ANY question with the QU bit for "My Printer._http._tcp.local."
    /// and the proposed SRV in the authority section.
    static let probe = Data(hexString: [
        "0000 0000 0001 0000 0001 0000",
        // offset 12: My Printer . _http._tcp.local.
        "0a4d79205072696e746572 055f68747470 045f746370 056c6f63616c 00", "00ff 8001",
        // authority: SRV, name -> 12, port 631, target printer + -> 35 (local)
        "c00c 0021 0001 00000078 0010", "0000 0000 0277", "077072696e746572 c022",
    ].joined().replacingOccurrences(of: " ", with: ""))

    static func hex(_ text: String) -> String { text.utf8.map { String(format: "%02x", $0) }.joined() }

    static var all: [(String, [UInt8])] {
        [("printerResponse", Array(printerResponse)), ("browseQuery", Array(browseQuery)), ("probe", Array(probe))]
    }
}
