// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

let package = Package(
    name: "SecureFoundation",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "SecureCore", targets: ["SecureCore"]),
        .library(name: "SecureKeys", targets: ["SecureKeys"]),
        .library(name: "SecureFoundation", targets: ["SecureFoundation"]),
        .executable(name: "sf", targets: ["sf"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .target(
            name: "SecureCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "SecureKeys",
            dependencies: [
                "SecureCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict
        ),
        .target(name: "SecureFoundation", dependencies: ["SecureCore", "SecureKeys"], swiftSettings: strict),
        .executableTarget(
            name: "sf",
            dependencies: [
                "SecureFoundation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // Shared by the test targets only (vectors, peers, processes); not a product.
        .target(name: "SFTestSupport", swiftSettings: strict),
        .testTarget(name: "SecureCoreTests", dependencies: ["SecureCore", "SFTestSupport"], swiftSettings: strict),
        .testTarget(name: "SecureKeysTests", dependencies: ["SecureKeys", "SFTestSupport"], swiftSettings: strict),
        .testTarget(name: "SFCLITests", dependencies: ["SecureFoundation", "SFTestSupport"], swiftSettings: strict),
    ]
)
