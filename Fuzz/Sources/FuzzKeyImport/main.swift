import Foundation
import FuzzSupport
import SecureCore
import SecureKeys

// Key import with format detection: PEM, DER (SPKI, PKCS#8, encrypted PKCS#8, PKCS#1, SEC1), base64
// DER, OpenSSH public key lines, JWK, X9.63 points. Encrypted PKCS#8 is tried with a fixed
// passphrase under FuzzLimits.kdf (PBKDF2 ≤ 2000 rounds).
let passphrase = SecretBytes(Data(FuzzLimits.passphrase.utf8))

Fuzz.main(seeds: {
    var seeds: [Data] = []
    for pem in [FixedKeys.rsa1024, FixedKeys.p256, FixedKeys.x25519, FixedKeys.ed25519] {
        let key = try KeyImport.privateKey(from: Data(pem.utf8))
        for format in KeyExportFormat.allCases {
            if format.isPrivate {
                guard let secret = try? key.exported(as: format, passphrase: passphrase, iterations: 100) else { continue }
                seeds.append(secret.withUnsafeBytes { Data($0) })
            } else if let data = try? key.publicKey.exported(as: format) {
                seeds.append(data)
            }
        }
    }
    return seeds
}) { input in
    _ = try? KeyImport.key(from: input, passphrase: passphrase, limits: FuzzLimits.kdf)
    _ = try? KeyImport.key(from: input)
    _ = try? KeyImport.x963PublicKey(input)
}
