import SecureCore

/// Cost ceilings inside the targets: every KDF an input can ask for stays in the milliseconds.
public enum FuzzLimits {
    /// scrypt logN ≤ 10, r ≤ 8, p ≤ 1 (≤ 1 MiB); PBKDF2 ≤ 2000 rounds.
    public static let kdf = KDFLimits(
        maxScryptLogN: 10, maxScryptR: 8, maxScryptP: 1, maxScryptMemory: 1 << 20, maxPBKDF2Rounds: 2000)
    /// The passphrase the targets try.
    public static let passphrase = "fuzz"
}
