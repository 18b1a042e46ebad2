import AgeEncryption
import Foundation
import FuzzSupport

// age ASCII armor, strictly decoded (then the header and payload inside it), with the testkit identities.
let identities = AgeFixtures.identities()
Fuzz.main(seeds: { try AgeFixtures.seeds(armored: true) }) { input in
    _ = try? Age.decrypt(input, identities: identities, encoding: .armored)
}
