// swift-tools-version:6.1
// The SecureRecords benchmark (see ../README.md, "SecureRecords"). Its own package so the main
// build stays lean; run it with ./run.sh.
import PackageDescription

let package = Package(
    name: "RecordsBenchmark",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "SecureFoundation", path: "../..")],
    targets: [
        // The raw-SQLite baseline links the same system libsqlite3 as SecureRecords.
        .systemLibrary(name: "CSQLiteBenchmark", path: "Sources/CSQLiteBenchmark"),
        .executableTarget(
            name: "RecordsBenchmark",
            dependencies: [
                "CSQLiteBenchmark",
                .product(name: "SecureRecords", package: "SecureFoundation"),
                .product(name: "SecureRecordsPostgres", package: "SecureFoundation"),
                .product(name: "SecureVault", package: "SecureFoundation"),
                .product(name: "SecureKeychain", package: "SecureFoundation"),
                .product(name: "SecureCore", package: "SecureFoundation"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
