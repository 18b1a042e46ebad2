// swift-tools-version:6.1
// The SecureVault benchmark (see ../README.md, "SecureVault"). Its own package so the main build
// stays lean; run it with ./run.sh.
import PackageDescription

let package = Package(
    name: "VaultBenchmark",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "SecureFoundation", path: "../..")],
    targets: [
        .executableTarget(
            name: "VaultBenchmark",
            dependencies: [.product(name: "SecureVault", package: "SecureFoundation")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
