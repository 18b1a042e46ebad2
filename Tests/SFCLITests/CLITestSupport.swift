import Foundation
import SFTestSupport
import Testing

/// Runs the built `sf` binary.
func sf(_ arguments: [String], stdin: Data = Data(), environment: [String: String]? = nil) throws -> ProcessResult {
    let binary = try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests)")
    return try TestSupport.run(binary.path, arguments, stdin: stdin, environment: environment)
}

/// True when a live peer is usable. Under CI a missing peer is recorded as a failure; elsewhere the
/// test is skipped with a visible message.
func peerAvailable(_ name: String, check: [String]) -> Bool {
    if let result = try? TestSupport.run(check[0], Array(check.dropFirst())), result.status == 0 { return true }
    let message = "peer \(name) is not available (\(check.joined(separator: " ")) failed)"
    if TestSupport.isCI { Issue.record(Comment(rawValue: message)) } else { print("SKIPPED: \(message)") }
    return false
}

/// A scratch directory with helpers for writing files, removed when the value is released.
final class Scratch {
    let url: URL
    init() throws { url = try TestSupport.temporaryDirectory("sf-cli") }
    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    @discardableResult
    func write(_ name: String, _ data: Data) throws -> String {
        try data.write(to: URL(fileURLWithPath: path(name)))
        return path(name)
    }

    func read(_ name: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path(name))) }
}

let envelopePeer = TestSupport.packageRoot.appendingPathComponent("Tests/peers/sf_envelope.py").path
