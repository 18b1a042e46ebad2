import AgeEncryption
import Foundation
import FuzzSupport
import SecureKeys

// age identity and recipient strings and files: age1…, age1pq1…, ssh-ed25519 lines,
// AGE-SECRET-KEY-1…, AGE-SECRET-KEY-PQ-1…, OpenSSH private keys.
Fuzz.main(seeds: {
    let x25519 = try Age.X25519Identity(AgeFixtures.x25519)
    var seeds = [AgeFixtures.x25519, x25519.recipient.string, "# comment\n\(AgeFixtures.x25519)\n"]
    if #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *) {
        let hybrid = try Age.HybridIdentity(AgeFixtures.hybrid)
        seeds += [AgeFixtures.hybrid, hybrid.recipient.description, "\(x25519.recipient.string)\n\(hybrid.recipient.description)\n"]
    }
    let ssh = try KeyImport.privateKey(from: Data(FixedKeys.ed25519.utf8)).publicKey.exported(as: .openssh)
    seeds.append(String(decoding: ssh, as: UTF8.self) + " fuzz@example")
    return seeds.map { Data($0.utf8) }
}) { input in
    let text = String(decoding: input, as: UTF8.self)
    _ = try? Age.parseRecipients(text)
    _ = try? Age.parseIdentities(text)
    _ = try? Age.parseRecipient(text)
}
