import Foundation
import FuzzSupport
import SecureCore

// iMAS legacy blobs (IV || AES-256-CBC(plaintext || checksum)) under a fixed key: length, padding and
// checksum checks. Seeds come from make-seeds.sh (Python `cryptography`), as the library only reads this format.
let key = SecretBytes(Data(repeating: 0x42, count: 32))
Fuzz.main { input in
    _ = try? LegacyIMAS.decrypt(input, key: key)
}
