import Foundation
import SecureKeys

// RSABenchmark PUBLIC_KEY SIGNATURE MESSAGE SCHEME [SECONDS]: verifies SIGNATURE (made by openssl)
// of MESSAGE with SecureKeys in a loop for SECONDS (default 3) and prints verifications per second.
let arguments = CommandLine.arguments
guard arguments.count >= 5, let scheme = SignatureScheme(rawValue: arguments[4]) else {
    FileHandle.standardError.write(Data("usage: RSABenchmark PUBLIC_KEY SIGNATURE MESSAGE SCHEME [SECONDS]\n".utf8))
    exit(2)
}
let key = try KeyImport.publicKey(from: Data(contentsOf: URL(fileURLWithPath: arguments[1])))
let signature = try Data(contentsOf: URL(fileURLWithPath: arguments[2]))
let message = try Data(contentsOf: URL(fileURLWithPath: arguments[3]))
let seconds = arguments.count > 5 ? Double(arguments[5]) ?? 3 : 3
precondition(key.isValidSignature(signature, for: message, scheme: scheme), "the signature does not verify")
let clock = ContinuousClock()
let start = clock.now
var count = 0
while clock.now - start < .seconds(seconds) {
    for _ in 0..<100 { precondition(key.isValidSignature(signature, for: message, scheme: scheme)) }
    count += 100
}
let elapsed = clock.now - start
let rate = Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
print(String(format: "SecureKeys %@ verify: %.0f verifications/s (%d in %.2f s)", scheme.rawValue, rate, count,
             Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
