import Crypto
import Foundation
import SecureCore

// Whole-process throughput of the envelope next to plain swift-crypto, with the system allocator
// (the ordo-one harness interposes malloc, which changes how large buffers are reused). Also a
// profiling driver: `Throughput MODE SIZE ITERATIONS` runs one operation in a loop for perf.
let key = SymmetricKey(size: .bits256)

func measure(_ mode: String, size: Int, iterations: Int) throws -> Double {
    let plaintext = Data(repeating: 0x5a, count: size)
    let sealed = try Envelope.seal(plaintext, key: key)
    let nonce = AES.GCM.Nonce()
    let box = try AES.GCM.seal(plaintext, using: key, nonce: nonce)
    var total = 0
    let start = ContinuousClock.now
    for _ in 0..<iterations {
        switch mode {
        case "Envelope.seal": total &+= try Envelope.seal(plaintext, key: key).count
        case "Envelope.open": total &+= try Envelope.open(sealed, key: key).count
        case "AES.GCM.seal": total &+= try AES.GCM.seal(plaintext, using: key, nonce: nonce).ciphertext.count
        case "AES.GCM.open": total &+= try AES.GCM.open(box, using: key).count
        default: fatalError("unknown mode \(mode)")
        }
    }
    let elapsed = ContinuousClock.now - start
    precondition(total > 0 || size == 0)
    return Double(size * iterations) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18) / 1e9
}

let modes = ["Envelope.seal", "Envelope.open", "AES.GCM.seal", "AES.GCM.open"]
let arguments = CommandLine.arguments
if arguments.count == 4 {
    print(String(format: "%@ %@ B: %.2f GB/s", arguments[1], arguments[2],
                 try measure(arguments[1], size: Int(arguments[2])!, iterations: Int(arguments[3])!)))
} else {
    print("operation (AES-256-GCM)     1 KiB GB/s   64 KiB GB/s   16 MiB GB/s   (best of 3, one core)")
    for mode in modes {
        var row = mode.padding(toLength: 26, withPad: " ", startingAt: 0)
        for (size, iterations) in [(1 << 10, 200_000), (1 << 16, 20_000), (1 << 24, 100)] {
            let best = try (0..<3).map { _ in try measure(mode, size: size, iterations: iterations) }.max()!
            row += String(format: "%12.2f  ", best)
        }
        print(row)
    }
}
