import Foundation
import SFTestSupport

enum DiscoveryPeers {
    /// The sf-discovery-probe binary built beside the tests.
    static var probe: String? { TestSupport.builtExecutable("sf-discovery-probe")?.path }

    static let zeroconfAvailable: Bool = {
        (try? TestSupport.run("python3", ["-c", "import zeroconf"]))?.status == 0
    }()

    static let zeroconfReason = "Python zeroconf is not installed (python3 -m pip install zeroconf); peer test skipped"

    static func peerScript(_ name: String) -> String {
        TestSupport.packageRoot.appendingPathComponent("Tests/peers/\(name)").path
    }

    static var python: String { TestSupport.which("python3") ?? "/usr/bin/python3" }
}
