import Crypto
import Foundation
import FuzzSupport
import SecureCore

// SFE1 envelopes: header parsing, then opening with a fixed raw key and with a passphrase
// (KDF costs capped by FuzzLimits.kdf).
let key = SymmetricKey(data: Data(repeating: 0x11, count: 32))
let passphrase = Data(FuzzLimits.passphrase.utf8)
Fuzz.main(seeds: {
    var seeds: [Data] = []
    for algorithm in [Envelope.Algorithm.aes256GCM, .chaCha20Poly1305] {
        for plaintext in [Data(), Data("hello envelope".utf8)] {
            seeds.append(try Envelope.seal(plaintext, key: key, algorithm: algorithm))
            seeds.append(try Envelope.seal(plaintext, key: key, algorithm: algorithm, context: Data("ctx".utf8)))
            seeds.append(try Envelope.seal(plaintext, passphrase: passphrase, kdf: .scrypt(logN: 4, r: 1, p: 1), algorithm: algorithm))
            seeds.append(try Envelope.seal(plaintext, passphrase: passphrase, kdf: .pbkdf2(hash: .sha256, rounds: 100), algorithm: algorithm))
        }
    }
    return seeds
}) { input in
    _ = try? Envelope.header(of: input)
    _ = try? Envelope.open(input, key: key)
    _ = try? Envelope.open(input, passphrase: passphrase, limits: FuzzLimits.kdf)
}
