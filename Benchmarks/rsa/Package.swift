// swift-tools-version:6.1
// The RSA benchmark (see ../README.md, "RSA"): SecureKeys' PSS verification next to OpenSSL. Its own
// package so the main build stays lean; run it with ./run.sh.
import PackageDescription

let package = Package(
    name: "RSABenchmark",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "SecureFoundation", path: "../..")],
    targets: [
        .executableTarget(
            name: "RSABenchmark",
            dependencies: [.product(name: "SecureKeys", package: "SecureFoundation")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
