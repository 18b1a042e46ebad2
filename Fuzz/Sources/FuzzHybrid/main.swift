import Foundation
import FuzzSupport
import SecureKeys

// SFK1 messages (SecureKeys HybridEncryption): prefix parsing (claimedSender), then decryption with
// fixed X25519, P-256 and RSA-2048 keys, anonymous and sender-authenticated.
let x25519 = try! KeyImport.privateKey(from: Data(FixedKeys.x25519.utf8))
let p256 = try! KeyImport.privateKey(from: Data(FixedKeys.p256.utf8))
let rsa = try! KeyImport.privateKey(from: Data(FixedKeys.rsa.utf8))
let keys = [x25519, p256, rsa]

Fuzz.main(seeds: {
    var seeds: [Data] = []
    for key in keys {
        for message in [Data(), Data("hello hybrid".utf8)] {
            seeds.append(try HybridEncryption.encrypt(message, to: key.publicKey))
            seeds.append(try HybridEncryption.encrypt(message, to: key.publicKey, from: key))
        }
    }
    return seeds
}) { input in
    _ = try? HybridEncryption.claimedSender(of: input)
    for key in keys {
        _ = try? HybridEncryption.decrypt(input, with: key)
        _ = try? HybridEncryption.decrypt(input, with: key, from: key.publicKey)
    }
}
