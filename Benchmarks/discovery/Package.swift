// swift-tools-version:6.1
import PackageDescription

// ServiceDiscovery codec throughput; run with run.sh beside this file.
let package = Package(
    name: "DiscoveryBenchmark",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "SecureFoundation", path: "../..")],
    targets: [
        .executableTarget(
            name: "DiscoveryBenchmark",
            dependencies: [.product(name: "ServiceDiscovery", package: "SecureFoundation")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
