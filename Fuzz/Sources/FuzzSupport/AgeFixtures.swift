import AgeEncryption
import Foundation
import SecureCore

/// The identities of the age testkit (C2SP/CCTV), so its vectors are seeds that decrypt.
public enum AgeFixtures {
    /// The testkit's usual X25519 identity.
    public static let x25519 = "AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0"
    /// The testkit's hybrid (ML-KEM-768 + X25519) identity.
    public static let hybrid = "AGE-SECRET-KEY-PQ-1HZLGZUPT4ETPKDEV8HSGFDCYZ4E522W0A7PU2LHT8EH9W6YLNC3SW78XKG"
    /// The testkit's passphrase; its scrypt vectors use work factor 10, the ceiling here.
    public static let passphrase = "password"
    /// Ceiling on scrypt's work factor inside the targets, so no input costs more than ~1 MiB of scrypt.
    public static let workFactorCeiling = 10

    /// X25519, hybrid and scrypt identities for the testkit's keys.
    public static func identities() -> [any Age.Identity] {
        var identities: [any Age.Identity] = []
        if let identity = try? Age.X25519Identity(x25519) { identities.append(identity) }
        if #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *),
            let identity = try? Age.HybridIdentity(hybrid)
        {
            identities.append(identity)
        }
        identities.append(
            Age.ScryptIdentity(passphrase: SecretBytes(Data(passphrase.utf8)), workFactorCeiling: workFactorCeiling))
        return identities
    }

    /// Small age files to the testkit identities, binary or armored (the testkit vectors are added by make-seeds.sh).
    public static func seeds(armored: Bool) throws -> [Data] {
        var recipients: [[any Age.Recipient]] = [[try Age.X25519Identity(x25519).recipient]]
        if #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *) {
            recipients.append([try Age.HybridIdentity(hybrid).recipient])
        }
        recipients.append([try Age.ScryptRecipient(passphrase: SecretBytes(Data(passphrase.utf8)), workFactor: 2)])
        var seeds: [Data] = []
        for list in recipients {
            for plaintext in [Data(), Data("hello age".utf8), Data(repeating: 0x61, count: 300)] {
                seeds.append(try Age.encrypt(plaintext, to: list, armored: armored))
            }
        }
        return seeds
    }
}
