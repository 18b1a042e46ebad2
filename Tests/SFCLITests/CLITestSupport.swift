import Foundation
import SFTestSupport
import Testing

/// Runs the built `sf` binary.
func sf(_ arguments: [String], stdin: Data = Data(), environment: [String: String]? = nil) throws -> ProcessResult {
    let binary = try #require(TestSupport.sfBinary, "the sf binary is built with the tests (swift build --build-tests -Xcc -O2)")
    return try TestSupport.run(binary.path, arguments, stdin: stdin, environment: environment)
}

/// The CLI tests' scratch directory (`sf-cli-…`).
final class Scratch: ScratchDirectory, @unchecked Sendable {
    init() throws { try super.init("sf-cli") }
}

let envelopePeer = TestSupport.packageRoot.appendingPathComponent("Tests/peers/sf_envelope.py").path
