// swift-tools-version:6.1
import PackageDescription

// libFuzzer targets for every parser, in their own package (like Benchmarks/) so the main build stays
// lean. Build and run them with ./run.sh or ./ci.sh (see README.md): the sanitizer flags
// (-sanitize=fuzzer,address) are passed by the scripts, not here.
let fuzzTargets: [(name: String, products: [String])] = [
    ("FuzzAgeDecrypt", ["AgeEncryption"]),
    ("FuzzAgeArmor", ["AgeEncryption"]),
    ("FuzzAgeKeys", ["AgeEncryption", "SecureKeys"]),
    ("FuzzEnvelope", ["SecureCore"]),
    ("FuzzStreamEnvelope", ["SecureCore"]),
    ("FuzzVault", ["SecureCore", "SecureKeychain", "SecureVault"]),
    ("FuzzHybrid", ["SecureKeys"]),
    ("FuzzHeimdall", ["SecureKeys"]),
    ("FuzzKeyImport", ["SecureCore", "SecureKeys"]),
    ("FuzzSignatures", ["SecureKeys"]),
    ("FuzzRSAPadding", ["SecureRSA", "SecureKeys", "SecureCore"]),
    ("FuzzDNS", ["ServiceDiscovery"]),
    ("FuzzNoise", ["NoiseProtocol"]),
    ("FuzzChannelFrames", ["NoiseProtocol", "SecureChannel"]),
    ("FuzzRecords", ["SecureCore", "SecureRecords"]),
    ("FuzzFullTextQuery", ["SecureCore", "SecureRecords", "SecureRecordsPostgres"]),
    ("FuzzLegacyIMAS", ["SecureCore"]),
    ("FuzzLegacyKeychain", ["SecureKeychain"]),
]

let package = Package(
    name: "SecureFoundationFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "SecureFoundation", path: ".."),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // Declares libFuzzer's LLVMFuzzerRunDriver (SwiftPM gives each executable its own main).
        .target(name: "CFuzzerDriver"),
        .target(
            name: "FuzzSupport",
            dependencies: [
                "CFuzzerDriver",
                .product(name: "SecureCore", package: "SecureFoundation"),
                .product(name: "AgeEncryption", package: "SecureFoundation"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
        + fuzzTargets.map { target in
            .executableTarget(
                name: target.name,
                dependencies: ["FuzzSupport", .product(name: "Crypto", package: "swift-crypto")]
                    + (target.name == "FuzzChannelFrames"
                        ? [.product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio")] : [])
                    + target.products.map { .product(name: $0, package: "SecureFoundation") },
                swiftSettings: [.swiftLanguageMode(.v6)]
            )
        }
)
