// swift-tools-version:6.1
// The SecureChannel benchmark (see ../README.md, "SecureChannel"). Its own package so the main
// build stays lean; run it with ./run.sh.
import PackageDescription

let package = Package(
    name: "ChannelBenchmark",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "SecureFoundation", path: "../.."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        .executableTarget(
            name: "ChannelBenchmark",
            dependencies: [
                .product(name: "SecureChannel", package: "SecureFoundation"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
