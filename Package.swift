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
        .library(name: "AgeEncryption", targets: ["AgeEncryption"]),
        .library(name: "SecureFoundation", targets: ["SecureFoundation"]),
        .executable(name: "sf", targets: ["sf"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
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
            name: "AgeEncryption",
            dependencies: [
                "SecureCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .target(name: "SecureFoundation", dependencies: ["SecureCore", "AgeEncryption"], swiftSettings: strict),
        .executableTarget(
            name: "sf",
            dependencies: [
                "SecureFoundation",
                .target(name: "CLinuxExtras", condition: .when(platforms: [.linux])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // Shared by the test targets only (vectors, peers, processes); not a product.
        .target(name: "SFTestSupport", swiftSettings: strict),
        .testTarget(name: "SecureCoreTests", dependencies: ["SecureCore", "SFTestSupport"], swiftSettings: strict),
        // glibc's mallopt and sync_file_range, for sf's allocator tuning and early writeback (Linux only).
        .systemLibrary(name: "CLinuxExtras", path: "Sources/CLinuxExtras"),
        // The system zlib, only so the age tests can inflate the testkit's compressed vectors.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        .testTarget(
            name: "AgeEncryptionTests", dependencies: ["AgeEncryption", "SFTestSupport", "CZlib"], swiftSettings: strict),
        .testTarget(name: "SFCLITests", dependencies: ["SecureFoundation", "SFTestSupport"], swiftSettings: strict),
    ]
)
