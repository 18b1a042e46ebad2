import AgeEncryption
import Foundation
import FuzzSupport

// age files (header, stanzas, MAC, payload; binary or armored, detected) decrypted with the testkit's
// X25519, hybrid and scrypt (work factor ≤ 10) identities.
let identities = AgeFixtures.identities()
Fuzz.main(seeds: { try AgeFixtures.seeds(armored: false) }) { input in
    _ = try? Age.decrypt(input, identities: identities, encoding: .detect)
}
