import Benchmark
import Crypto
import Foundation
import SecureCore

/// SecureCore throughput and KDF cost, next to plain swift-crypto on the same inputs. Throughput
/// benchmarks process one message per iteration: bytes/s = operations/s × message size.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .peakMemoryResident],
        maxDuration: .seconds(3), maxIterations: 100_000)

    let key = SymmetricKey(size: .bits256)
    for (label, size) in [("1 KiB", 1 << 10), ("64 KiB", 1 << 16), ("16 MiB", 1 << 24)] {
        let plaintext = SecureRandom.bytes(count: size)
        let sealed = try! Envelope.seal(plaintext, key: key)
        let nonce = AES.GCM.Nonce()
        let box = try! AES.GCM.seal(plaintext, using: key, nonce: nonce)

        Benchmark("Envelope.seal AES-256-GCM \(label)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try Envelope.seal(plaintext, key: key)) }
        }
        Benchmark("Envelope.open AES-256-GCM \(label)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try Envelope.open(sealed, key: key)) }
        }
        Benchmark("swift-crypto AES.GCM.seal \(label)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try AES.GCM.seal(plaintext, using: key, nonce: nonce)) }
        }
        Benchmark("swift-crypto AES.GCM.open \(label)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try AES.GCM.open(box, using: key)) }
        }
    }

    let kdfConfiguration = Benchmark.Configuration(metrics: [.wallClock, .peakMemoryResident], maxDuration: .seconds(5), maxIterations: 5)
    for (label, kdf) in [("scrypt logN 17", PasswordKDF.scrypt(logN: 17, r: 8, p: 1)),
                         ("scrypt logN 18", .scrypt(logN: 18, r: 8, p: 1)),
                         ("PBKDF2-SHA256 600k", .pbkdf2(hash: .sha256, rounds: 600_000))] {
        Benchmark("KDF \(label)", configuration: kdfConfiguration) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try kdf.deriveKey(from: Data("password".utf8), salt: Data("saltsaltsaltsalt".utf8)))
            }
        }
    }
}
