import Benchmark
import Foundation
import SecureCore
import SecureKeys

/// SecureKeys raw operations and hybrid encryption; one operation per iteration, so the throughput
/// column is operations per second (compare with `openssl speed` printed by Benchmarks/keys.sh).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.throughput, .wallClock], maxDuration: .seconds(2), maxIterations: 100_000)

    let message = Data(repeating: 0x61, count: 64)
    for type in [KeyType.rsa2048, .rsa3072] {
        let key = try! AsymmetricPrivateKey.generate(type)
        let signature = try! key.signature(for: message, scheme: .rsaPKCS1v15)
        let pss = try! key.signature(for: message, scheme: .rsaPSS)
        Benchmark("\(type) sign PKCS1v15-SHA256") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try key.signature(for: message, scheme: .rsaPKCS1v15)) }
        }
        Benchmark("\(type) verify PKCS1v15-SHA256") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(key.publicKey.isValidSignature(signature, for: message, scheme: .rsaPKCS1v15)) }
        }
        Benchmark("\(type) sign PSS-SHA256") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try key.signature(for: message, scheme: .rsaPSS)) }
        }
        Benchmark("\(type) verify PSS-SHA256") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(key.publicKey.isValidSignature(pss, for: message, scheme: .rsaPSS)) }
        }
    }

    guard case .rsa(let rsa) = try! AsymmetricPrivateKey.generate(.rsa2048) else { return }
    let secret = SecretBytes.random(count: 32)
    let wrapped = try! rsa.publicKey.wrap(secret)
    Benchmark("rsa2048 OAEP-SHA256 wrap") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try rsa.publicKey.wrap(secret)) }
    }
    Benchmark("rsa2048 OAEP-SHA256 unwrap") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try rsa.unwrap(wrapped)) }
    }

    let p256 = try! AsymmetricPrivateKey.generate(.p256)
    let ecdsa = try! p256.signature(for: message)
    Benchmark("p256 ECDSA sign") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try p256.signature(for: message)) }
    }
    Benchmark("p256 ECDSA verify") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(p256.publicKey.isValidSignature(ecdsa, for: message)) }
    }

    let ed25519 = try! AsymmetricPrivateKey.generate(.ed25519)
    let eddsa = try! ed25519.signature(for: message)
    Benchmark("ed25519 sign") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try ed25519.signature(for: message)) }
    }
    Benchmark("ed25519 verify") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(ed25519.publicKey.isValidSignature(eddsa, for: message)) }
    }

    let x25519 = try! AsymmetricPrivateKey.generate(.x25519)
    let peer = try! AsymmetricPrivateKey.generate(.x25519).publicKey
    Benchmark("x25519 agreement") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try x25519.sharedSecret(with: peer)) }
    }

    for (label, size) in [("1 KiB", 1 << 10), ("1 MiB", 1 << 20)] {
        let plaintext = SecureRandom.bytes(count: size)
        for recipient in [x25519, AsymmetricPrivateKey.rsa(rsa)] {
            let sealed = try! HybridEncryption.encrypt(plaintext, to: recipient.publicKey)
            Benchmark("hybrid encrypt \(recipient.type) \(label)") { benchmark in
                for _ in benchmark.scaledIterations { blackHole(try HybridEncryption.encrypt(plaintext, to: recipient.publicKey)) }
            }
            Benchmark("hybrid decrypt \(recipient.type) \(label)") { benchmark in
                for _ in benchmark.scaledIterations { blackHole(try HybridEncryption.decrypt(sealed, with: recipient)) }
            }
        }
    }
}
