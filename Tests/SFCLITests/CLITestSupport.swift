import Foundation
import SFTestSupport
import Testing

/// Runs the built `sf` binary.
func sf(_ arguments: [String], stdin: Data = Data(), environment: [String: String]? = nil) throws -> ProcessResult {
    let binary = try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests)")
    return try TestSupport.run(binary.path, arguments, stdin: stdin, environment: environment)
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
