// swift-tools-version:6.1
import PackageDescription

// Benchmarks live in their own package so the main build stays lean. Run them with the scripts in
// this folder (see README.md), which also run the peers (openssl, Python) in the same invocation.
let package = Package(
    name: "SecureFoundationBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "SecureFoundation", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SecureCore", package: "SecureFoundation"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/CoreBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
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
        .executableTarget(
            name: "Throughput",
            dependencies: [
                .product(name: "SecureCore", package: "SecureFoundation"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/Throughput",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
