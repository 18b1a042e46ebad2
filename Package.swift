// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

let crypto: [Target.Dependency] = [
    .product(name: "Crypto", package: "swift-crypto"),
    .product(name: "CryptoExtras", package: "swift-crypto"),
]

let package = Package(
    name: "SecureFoundation",
    // macOS 15 / iOS 18: the Synchronization module's Mutex, which the targets use.
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "SecureCore", targets: ["SecureCore"]),
        .library(name: "SecureKeychain", targets: ["SecureKeychain"]),
        .library(name: "SecureVault", targets: ["SecureVault"]),
        .library(name: "SecureKeys", targets: ["SecureKeys"]),
        // Keys by tag in a keychain: apart from SecureKeys, so key parsing links no SQLite.
        .library(name: "SecureKeyStore", targets: ["SecureKeyStore"]),
        .library(name: "AgeEncryption", targets: ["AgeEncryption"]),
        // RSA paddings swift-crypto lacks (PSS verification with any salt length, OAEP with a label).
        .library(name: "SecureRSA", targets: ["SecureRSA"]),
        .library(name: "SecureRecords", targets: ["SecureRecords"]),
        // SecureRecords on PostgreSQL: its own product so SQLite-only users do not link postgres-nio.
        .library(name: "SecureRecordsPostgres", targets: ["SecureRecordsPostgres"]),
        // The Noise Protocol Framework alone (no networking, swift-crypto only).
        .library(name: "NoiseProtocol", targets: ["NoiseProtocol"]),
        .library(name: "SecureChannel", targets: ["SecureChannel"]),
        .library(name: "SecureFoundation", targets: ["SecureFoundation"]),
        .library(name: "ServiceDiscovery", targets: ["ServiceDiscovery"]),
        .executable(name: "sf", targets: ["sf"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Up to the next minor version: bulk loads shape the COPY statement postgres-nio 1.33 builds
        // (`PostgresSession.Transaction.binaryCopyTarget`).
        .package(url: "https://github.com/vapor/postgres-nio", .upToNextMinor(from: "1.33.2")),
        // The RSA public operation for PSS verification with any salt length and OAEP with a label.
        .package(url: "https://github.com/attaswift/BigInt", from: "6.0.1"),
    ],
    targets: [
        .target(
            name: "SecureCore", dependencies: crypto + [.target(name: "CLinuxExtras", condition: .when(platforms: [.linux]))],
            swiftSettings: strict),
        // RSA paddings swift-crypto lacks: PSS verification with any salt length, OAEP with a label.
        // Public-key operations on BigInt (no secret involved), private-key ones in BoringSSL.
        .target(
            name: "SecureRSA",
            dependencies: ["SecureCore", .product(name: "BigInt", package: "BigInt")] + crypto,
            swiftSettings: strict
        ),
        // The system's libsqlite3 (module map only; see Sources/CSQLite).
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        // The thin SQLite wrapper shared by SecureKeychain and SecureRecords (package-internal; not a product).
        .target(name: "SQLiteSupport", dependencies: ["CSQLite"], swiftSettings: strict),
        .target(name: "SecureKeychain", dependencies: ["SecureCore", "SQLiteSupport"], swiftSettings: strict),
        .target(name: "SecureVault", dependencies: ["SecureCore", "SecureKeychain"], swiftSettings: strict),
        .target(
            name: "SecureKeys",
            dependencies: ["SecureCore", "SecureRSA", .product(name: "SwiftASN1", package: "swift-asn1")] + crypto,
            swiftSettings: strict
        ),
        .target(name: "SecureKeyStore", dependencies: ["SecureCore", "SecureKeys", "SecureKeychain"], swiftSettings: strict),
        .target(name: "AgeEncryption", dependencies: ["SecureCore", "SecureRSA"] + crypto, swiftSettings: strict),
        .target(name: "SecureRecords", dependencies: ["SecureCore", "SQLiteSupport", "CSQLite"] + crypto, swiftSettings: strict),
        // The PostgreSQL `RecordStorage` (postgres-nio; TLS through swift-nio-ssl).
        .target(
            name: "SecureRecordsPostgres",
            dependencies: [
                "SecureRecords", "SecureCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The Noise Protocol Framework (revision 34) state machine: computation only, swift-crypto only.
        .target(name: "NoiseProtocol", dependencies: crypto, swiftSettings: strict),
        // Noise over TCP on SwiftNIO: framing, trust, client and server (re-exports NoiseProtocol).
        .target(
            name: "SecureChannel",
            dependencies: [
                "NoiseProtocol", "SecureCore", "SecureKeys", "SecureKeyStore", "SecureKeychain",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ] + crypto,
            swiftSettings: strict
        ),
        .target(
            name: "SecureFoundation",
            dependencies: [
                "SecureCore", "SecureKeychain", "SecureVault", "SecureKeys", "SecureKeyStore", "AgeEncryption", "SecureRecords", "SecureChannel",
            ],
            swiftSettings: strict
        ),
        // DNS-SD over multicast DNS (RFC 6763 / RFC 6762): message codec, names, and on Linux a responder
        // and querier on SwiftNIO UDP multicast sockets; the system's DNS-SD daemon through CDNSServiceShim.
        // The DNS-SD C API's declarations (dns_sd.h), for the `.system` backend: resolved at run time with
        // dlsym, so nothing links against a DNS-SD library at build time.
        .target(name: "CDNSServiceShim", path: "Sources/CDNSServiceShim"),
        .target(
            name: "ServiceDiscovery",
            dependencies: [
                "CDNSServiceShim",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // Test helper only (not a product): advertises or browses on one interface and prints JSON, so
        // the discovery tests can run it inside network namespaces with `ip netns exec`.
        .executableTarget(
            name: "sf-discovery-probe",
            dependencies: ["ServiceDiscovery"],
            path: "Sources/DiscoveryProbe",
            swiftSettings: strict
        ),
        // Test helper only (not a product): the keychain's crash and two-process tests run it as a
        // child that writes and synchronizes in a loop until killed.
        .executableTarget(
            name: "sf-keychain-stress",
            dependencies: ["SecureKeychain"],
            path: "Sources/KeychainStress",
            swiftSettings: strict
        ),
        // glibc's mallopt, sync_file_range, F_SETPIPE_SZ and pthread_setname_np: sf's allocator and pipe tuning, SecureCore's early
        // writeback and thread names (Linux only).
        .systemLibrary(name: "CLinuxExtras", path: "Sources/CLinuxExtras"),
        .executableTarget(
            name: "sf",
            dependencies: [
                "SecureFoundation", "SecureChannel", "ServiceDiscovery", "SecureRecordsPostgres",
                .product(name: "NIOCore", package: "swift-nio"),
                .target(name: "CLinuxExtras", condition: .when(platforms: [.linux])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // Shared by the test targets only (vectors, peers, processes); not a product.
        .target(name: "SFTestSupport", dependencies: ["SecureCore"], swiftSettings: strict),
        // The system zlib, only so the age tests can inflate the testkit's compressed vectors.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        .testTarget(name: "SecureCoreTests", dependencies: ["SecureCore", "SFTestSupport"], swiftSettings: strict),
        .testTarget(name: "SecureKeychainTests", dependencies: ["SecureKeychain", "SQLiteSupport", "SFTestSupport"], swiftSettings: strict),
        .testTarget(name: "SecureVaultTests", dependencies: ["SecureVault", "SFTestSupport"], swiftSettings: strict),
        .testTarget(name: "SecureKeysTests", dependencies: ["SecureKeys", "SecureRSA", "SFTestSupport"] + crypto, swiftSettings: strict),
        .testTarget(
            name: "SecureKeyStoreTests", dependencies: ["SecureKeyStore", "SecureKeys", "SecureKeychain", "SFTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "AgeEncryptionTests", dependencies: ["AgeEncryption", "SFTestSupport", "CZlib"] + crypto, swiftSettings: strict),
        .testTarget(
            name: "SecureRecordsTests",
            dependencies: [
                "SecureRecords", "SecureRecordsPostgres", "SecureCore", "SecureKeychain", "SecureVault", "SFTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "ServiceDiscoveryTests",
            dependencies: ["ServiceDiscovery", "SFTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SecureChannelTests",
            dependencies: [
                "SecureChannel", "NoiseProtocol", "SecureKeys", "SecureKeyStore", "SecureKeychain", "SecureCore", "ServiceDiscovery", "SFTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // The README's Swift examples, generated by scripts/readme-examples.py, compiled and run.
        .testTarget(
            name: "ReadmeExamplesTests",
            dependencies: [
                "SecureFoundation", "SFTestSupport",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict),
        .testTarget(name: "SFCLITests", dependencies: ["SecureFoundation", "SecureRecordsPostgres", "SFTestSupport"], swiftSettings: strict),
    ]
)
