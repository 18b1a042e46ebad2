// swift-tools-version:6.1
// The SecureKeychain benchmark (see ../README.md, "SecureKeychain"). Its own package so the main
// build stays lean; run it with ./run.sh.
import PackageDescription

let package = Package(
    name: "KeychainBenchmark",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "SecureFoundation", path: "../..")],
    targets: [
        // The raw-SQLite baseline links the same system libsqlite3 as SecureKeychain's CSQLite
        // (a package's system-library target cannot be used from another package).
        .systemLibrary(name: "CSQLiteBenchmark", path: "Sources/CSQLiteBenchmark"),
        .executableTarget(
            name: "KeychainBenchmark",
            dependencies: ["CSQLiteBenchmark", .product(name: "SecureKeychain", package: "SecureFoundation")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
