// sf-discovery-probe: a test helper (not a product). It advertises or browses DNS-SD on one network
// interface and prints JSON lines, so the ServiceDiscovery tests can run it inside network
// namespaces with `ip netns exec`. Usage:
//   sf-discovery-probe advertise --interface IF --name NAME --port PORT [--host LABEL] [--type T]
//                                [--txt key=value]... [--duration SECONDS] [--family 4|6|all] [--backend auto|builtin|system]
//       prints {"event":"advertised",...} once announced, then runs until standard input closes or
//       the duration ends, sends the goodbye and prints {"event":"stopped",...} (statistics and the
//       instance name as advertised at the end, which a conflict after announcing may have changed).
//   sf-discovery-probe browse --interface IF [--type T] [--timeout SECONDS] [--name NAME] [--family 4|6|all] [--backend auto|builtin|system]
//       prints {"event":"browsed","instances":[...]}; with --name, stops as soon as NAME resolves.
import Foundation
import ServiceDiscovery

#if os(Linux)
struct Options {
    var values = [String: String]()
    var txt = [String: String]()

    init(_ arguments: ArraySlice<String>) throws {
        var iterator = arguments.makeIterator()
        while let flag = iterator.next() {
            guard flag.hasPrefix("--"), let value = iterator.next() else { throw ProbeError("expected --flag value, got \(flag)") }
            if flag == "--txt" {
                let parts = value.split(separator: "=", maxSplits: 1).map(String.init)
                txt[parts[0]] = parts.count > 1 ? parts[1] : ""
            } else {
                values[String(flag.dropFirst(2))] = value
            }
        }
    }

    func require(_ name: String) throws -> String {
        guard let value = values[name] else { throw ProbeError("missing --\(name)") }
        return value
    }
}

struct ProbeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func emit(_ object: [String: Any]) {
    let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    FileHandle.standardOutput.write(data + Data("\n".utf8))
}

func json(_ instance: ServiceInstance) -> [String: Any] {
    [
        "name": instance.name, "type": instance.type.description, "host": instance.host.description,
        "addresses": instance.addresses.map(\.description), "port": Int(instance.port), "txt": instance.txt.dictionary,
    ]
}

/// Resumes when standard input reaches end of file or after `seconds`, whichever comes first.
func waitForEndOfInputOrTimeout(seconds: Double) async {
    let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
    DispatchQueue.global().async {
        _ = FileHandle.standardInput.readDataToEndOfFile()
        continuation.yield()
    }
    let timer = Task {
        try? await Task.sleep(for: .seconds(seconds))
        continuation.yield()
    }
    for await _ in stream { break }
    timer.cancel()
}

func main() async throws {
    let arguments = CommandLine.arguments
    guard arguments.count >= 2 else { throw ProbeError("usage: sf-discovery-probe advertise|browse --interface IF ...") }
    let options = try Options(arguments.dropFirst(2))
    switch arguments[1] {
    case "advertise": try await advertise(options)
    case "browse": try await browse(options)
    default: throw ProbeError("unknown command \(arguments[1])")
    }
}

func serviceType(_ options: Options) throws -> ServiceType {
    guard let text = options.values["type"] else { return .secureChannel }
    return try ServiceType(text)
}

func families(_ options: Options) throws -> IPFamilies {
    switch options.values["family"] ?? "all" {
    case "4": .ipv4
    case "6": .ipv6
    case "all": .all
    default: throw ProbeError("--family is 4, 6 or all")
    }
}

func backend(_ options: Options) throws -> DiscoveryBackend {
    guard let text = options.values["backend"] else { return .platformDefault }
    guard let backend = DiscoveryBackend.chosen(text, interface: options.values["interface"]) else {
        throw ProbeError("unknown --backend \(text)")
    }
    return backend
}

func advertise(_ options: Options) async throws {
    guard let port = UInt16(try options.require("port")) else { throw ProbeError("bad --port") }
    let interface = try options.require("interface")
    let name = try options.require("name")
    let type = try serviceType(options)
    let txt = try TXTRecord(options.txt)
    let chosen = try backend(options)
    let advertiser = try ServiceAdvertiser(
        interface: interface, instanceName: name, type: type, port: port, txt: txt, hostName: options.values["host"],
        families: try families(options), backend: chosen)
    let records = try await advertiser.start()
    emit([
        "event": "advertised", "name": String(decoding: records.instanceName.labels[0], as: UTF8.self),
        "host": records.host.description, "addresses": records.addresses.map(\.description), "backend": chosen.description,
    ])
    await waitForEndOfInputOrTimeout(seconds: Double(options.values["duration"] ?? "120") ?? 120)
    let statistics = advertiser.statistics
    await advertiser.stop()
    emit([
        "event": "stopped", "received": statistics.received, "malformed": statistics.malformed,
        "answered": statistics.answered, "rateLimited": statistics.rateLimited, "conflicts": statistics.conflicts, "offLink": statistics.offLink, "unsolicitedUnicast": statistics.unsolicitedUnicast, "tieBreaksLost": statistics.tieBreaksLost,
        "delayed": statistics.delayed, "aggregated": statistics.aggregated, "lateConflicts": statistics.lateConflicts, "renumbered": statistics.renumbered,
        "name": String(decoding: advertiser.records.instanceName.labels[0], as: UTF8.self),
    ])
}

func browse(_ options: Options) async throws {
    let interface = try options.require("interface")
    let type = try serviceType(options)
    let timeout = Duration.milliseconds(Int64((Double(options.values["timeout"] ?? "5") ?? 5) * 1000))
    let browser = ServiceBrowser(interface: interface, type: type, families: try families(options), backend: try backend(options))
    var found = [[String: Any]]()
    if let name = options.values["name"] {
        let result = await resolveResult(browser, name: name, timeout: timeout)
        switch result {
        case .success(let instance): found.append(json(instance))
        case .failure(.notFound): break
        case .failure(let error): throw error
        }
    } else {
        let instances = try await browser.browse(timeout: timeout)
        found = instances.map(json)
    }
    emit(["event": "browsed", "instances": found])
}

func resolveResult(_ browser: ServiceBrowser, name: String, timeout: Duration) async -> Result<ServiceInstance, ServiceDiscoveryError> {
    do {
        return .success(try await browser.resolve(instanceName: name, timeout: timeout))
    } catch {
        return .failure(error)
    }
}

do {
    try await main()
} catch {
    FileHandle.standardError.write(Data("sf-discovery-probe: \(error)\n".utf8))
    exit(1)
}
#else
print("sf-discovery-probe: only implemented on Linux")
exit(1)
#endif
