// swift-tools-version:6.1
import PackageDescription

// SecureKeys benchmarks, in their own package so the main build stays lean. Run them with
// Benchmarks/keys.sh, which also prints `openssl speed` for the same operations in the same run.
let package = Package(
    name: "SecureKeysBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "SecureFoundation", path: "../.."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "KeysBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SecureKeys", package: "SecureFoundation"),
                .product(name: "SecureCore", package: "SecureFoundation"),
            ],
            path: "Benchmarks/KeysBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
