import Crypto
import CryptoExtras
import Foundation

/// A password-based key derivation function with its cost parameters. The value travels with the
/// data it protects (see docs/FORMATS.md), so defaults can rise without breaking old data.
public enum PasswordKDF: Sendable, Hashable, CustomStringConvertible {
    /// scrypt (RFC 7914) with N = 2^logN, block size r and parallelism p. Memory use is 128·r·N bytes.
    case scrypt(logN: UInt8, r: UInt32, p: UInt32)
    /// PBKDF2 (RFC 8018) with HMAC over `hash` (SHA-256, or SHA-1 for compatibility) and `rounds` iterations.
    case pbkdf2(hash: HashFunction, rounds: UInt32)

    /// scrypt logN 17, r 8, p 1: the OWASP minimum, about 0.3 s and 128 MiB here.
    public static let `default` = PasswordKDF.scrypt(logN: 17, r: 8, p: 1)
    /// PBKDF2-HMAC-SHA256 with 600,000 rounds (OWASP), for when scrypt cannot be used.
    public static let pbkdf2Default = PasswordKDF.pbkdf2(hash: .sha256, rounds: 600_000)

    /// The KDF and its parameters, for example `scrypt(logN=17, r=8, p=1)`; no salt or secret.
    public var description: String {
        switch self {
        case .scrypt(let logN, let r, let p): "scrypt(logN=\(logN), r=\(r), p=\(p))"
        case .pbkdf2(let hash, let rounds): "pbkdf2-hmac-\(hash.name)(rounds=\(rounds))"
        }
    }

    /// Checks the parameters are valid and within `limits`; throws before any derivation work.
    public func validate(within limits: KDFLimits = .default) throws(SecureCoreError) {
        switch self {
        case .scrypt(let logN, let r, let p):
            guard logN <= limits.maxScryptLogN else {
                throw SecureCoreError.costAboveCeiling("scrypt logN \(logN) above ceiling \(limits.maxScryptLogN)")
            }
            // logN ≤ 56 keeps 128·r·2^logN representable for any UInt32 r below.
            guard logN >= 1, logN <= 56, r >= 1, p >= 1, UInt64(r) * UInt64(p) < 1 << 30 else {
                throw SecureCoreError.invalidParameter("scrypt parameters logN=\(logN) r=\(r) p=\(p) are invalid")
            }
            guard r <= limits.maxScryptR, p <= limits.maxScryptP else {
                throw SecureCoreError.costAboveCeiling(
                    "scrypt r=\(r) p=\(p) above ceiling r≤\(limits.maxScryptR) p≤\(limits.maxScryptP)")
            }
            let (memory, overflow) = (128 * UInt64(r)).multipliedReportingOverflow(by: 1 << UInt64(logN))
            guard !overflow, memory <= limits.maxScryptMemory else {
                throw SecureCoreError.costAboveCeiling("scrypt needs \(memory >> 20) MiB, ceiling \(limits.maxScryptMemory >> 20) MiB")
            }
            // Time grows with N·r·p, memory only with N·r: bound both.
            let (work, workOverflow) = (UInt64(r) * UInt64(p)).multipliedReportingOverflow(by: 1 << UInt64(logN))
            guard !workOverflow, work <= limits.maxScryptWork else {
                throw SecureCoreError.costAboveCeiling(
                    "scrypt work N·r·p = 2^\(logN)·\(r)·\(p) above ceiling \(limits.maxScryptWork) (2^\(limits.maxScryptLogN)·8·1 by default)")
            }
            // BoringSSL's own bounds: N at most 2^32, and N below 2^(16·r) (RFC 7914).
            guard logN <= 32, !(r <= 3 && UInt64(logN) >= 16 * UInt64(r)) else {
                throw SecureCoreError.invalidParameter("scrypt with logN=\(logN) and r=\(r) is not supported (N is at most 2^32 and below 2^(16·r))")
            }
            // swift-crypto bounds BoringSSL's scrypt memory at 128·N·r·p bytes and a page (its
            // `maxMemory` argument is not passed on), less than the 128·r·(N + p + 1) BoringSSL
            // checks for when 128·r·(N + p + 1 − N·p) exceeds the page: with 4 KiB pages and p = 1,
            // any r above 16; with p = 2 and N = 2, any r above 32. Refused here, before any work,
            // rather than failing as "out of memory" at a few MiB.
            let excess: UInt64 = p == 1 ? 2 : (p == 2 && logN == 1 ? 1 : 0)
            let pageSize = UInt64(max(4096, sysconf(Int32(_SC_PAGESIZE))))
            guard 128 * UInt64(r) * excess <= pageSize else {
                throw SecureCoreError.invalidParameter(
                    "scrypt with r=\(r) and p=\(p) is not supported (swift-crypto derives it only for r up to \(pageSize / (128 * excess)))")
            }
        case .pbkdf2(let hash, let rounds):
            guard hash == .sha256 || hash == .sha384 || hash == .sha512 || hash == HashFunction.Insecure.sha1 else {
                throw SecureCoreError.invalidParameter("PBKDF2 with \(hash.name) is not supported")
            }
            guard rounds >= 1 else { throw SecureCoreError.invalidParameter("PBKDF2 rounds must be at least 1") }
            guard rounds <= limits.maxPBKDF2Rounds else {
                throw SecureCoreError.costAboveCeiling("PBKDF2 rounds \(rounds) above ceiling \(limits.maxPBKDF2Rounds)")
            }
        }
    }

    /// Derives `outputByteCount` bytes from `passphrase` and `salt`, after `validate(within:)`.
    public func deriveKey<P: DataProtocol, S: DataProtocol>(
        from passphrase: P, salt: S, outputByteCount: Int = 32, limits: KDFLimits = .default
    ) throws(SecureCoreError) -> SecretBytes {
        try validate(within: limits)
        let key: SymmetricKey
        switch self {
        case .scrypt(let logN, let r, let p):
            do {
                key = try KDF.Scrypt.deriveKey(
                    from: passphrase, salt: salt, outputByteCount: outputByteCount,
                    rounds: 1 << Int(logN), blockSize: Int(r), parallelism: Int(p))
            } catch {
                // Parameters were validated above, so a failure here is the allocation of 128·r·N bytes.
                let mebibytes = ((128 * UInt64(r)) << UInt64(logN)) >> 20
                throw SecureCoreError.outOfMemory("scrypt (logN \(logN), r \(r)) could not get its \(mebibytes) MiB of memory")
            }
        case .pbkdf2(let hash, let rounds):
            let function: KDF.Insecure.PBKDF2.HashFunction =
                switch hash.kind {
                case .sha384: .sha384
                case .sha512: .sha512
                case .sha1: .insecureSHA1
                default: .sha256
                }
            // Rounds below swift-crypto's floor are only accepted for compatibility with existing data.
            do {
                key = try KDF.Insecure.PBKDF2.deriveKey(
                    from: passphrase, salt: salt, using: function, outputByteCount: outputByteCount,
                    unsafeUncheckedRounds: Int(rounds))
            } catch {
                throw .invalidParameter("PBKDF2 cannot derive \(outputByteCount) bytes")
            }
        }
        return SecretBytes(key)
    }

    /// The scrypt cost (r 8, p 1) whose derivation takes closest to, without exceeding by more than
    /// a factor of two, `target` on this machine, capped by `limits`. Measures logN 12 and
    /// extrapolates (scrypt time doubles with each logN step), then confirms with one run.
    /// Throws `SecureCoreError.outOfMemory` when the probe derivation cannot allocate.
    public static func calibrateScrypt(target: Duration, limits: KDFLimits = .default) throws(SecureCoreError) -> PasswordKDF {
        let clock = ContinuousClock()
        let probeLogN: UInt8 = 12
        let start = clock.now
        _ = try PasswordKDF.scrypt(logN: probeLogN, r: 8, p: 1).deriveKey(from: [0], salt: [0])
        let probe = clock.now - start
        var logN = probeLogN
        var estimate = probe
        while logN < limits.maxScryptLogN, estimate * 2 <= target {
            logN += 1
            estimate = estimate * 2
        }
        return .scrypt(logN: max(logN, 10), r: 8, p: 1)
    }

    /// The PBKDF2-HMAC-SHA256 round count that takes about `target` on this machine, capped by `limits`.
    /// Throws `SecureCoreError` only as `deriveKey` does (not for the probe parameters).
    public static func calibratePBKDF2(target: Duration, limits: KDFLimits = .default) throws(SecureCoreError) -> PasswordKDF {
        let probeRounds: UInt32 = 50_000
        let clock = ContinuousClock()
        let start = clock.now
        _ = try PasswordKDF.pbkdf2(hash: .sha256, rounds: probeRounds).deriveKey(from: [0], salt: [0])
        let probe = clock.now - start
        let ratio = target / probe
        let rounds = min(Double(limits.maxPBKDF2Rounds), max(1_000, Double(probeRounds) * ratio))
        return .pbkdf2(hash: .sha256, rounds: UInt32(rounds))
    }
}

extension PasswordKDF {
    /// The lowest scrypt cost exponent `sf` seals new secrets with (N = 1,024): below it a
    /// password is guessed too cheaply to call it sealed. Readers accept lower costs (files
    /// written elsewhere); writers' upper bound is the readers' ceiling, `KDFLimits.default`.
    public static let minimumScryptLogN: UInt8 = 10
    /// The fewest PBKDF2 rounds `sf` seals new secrets with: NIST SP 800-132's minimum of 1,000
    /// (the default, `pbkdf2Default`, is 600,000).
    public static let minimumPBKDF2Rounds: UInt32 = 1_000
}

/// Ceilings on KDF costs accepted from untrusted input, so a crafted header cannot make a reader
/// spend hours or gigabytes before failing.
public struct KDFLimits: Sendable, Hashable {
    /// Highest scrypt cost exponent accepted (N = 2^logN).
    public var maxScryptLogN: UInt8
    /// Highest scrypt block size r accepted.
    public var maxScryptR: UInt32
    /// Highest scrypt parallelism p accepted.
    public var maxScryptP: UInt32
    /// Upper bound on scrypt's 128·r·N bytes of memory.
    public var maxScryptMemory: UInt64
    /// Upper bound on scrypt's work, N·r·p (its time is proportional to it).
    public var maxScryptWork: UInt64
    /// Highest PBKDF2 iteration count accepted.
    public var maxPBKDF2Rounds: UInt32

    /// Ceilings; `maxScryptWork` defaults to 2^maxScryptLogN · 8 · 1, the work of the largest
    /// accepted N with the usual r 8 and p 1 (2^25 for the default logN 22).
    public init(
        maxScryptLogN: UInt8 = 22, maxScryptR: UInt32 = 32, maxScryptP: UInt32 = 16,
        maxScryptMemory: UInt64 = 4 << 30, maxScryptWork: UInt64? = nil, maxPBKDF2Rounds: UInt32 = 10_000_000
    ) {
        self.maxScryptLogN = maxScryptLogN
        self.maxScryptR = maxScryptR
        self.maxScryptP = maxScryptP
        self.maxScryptMemory = maxScryptMemory
        self.maxScryptWork = maxScryptWork ?? (maxScryptLogN >= 60 ? .max : UInt64(8) << UInt64(maxScryptLogN))
        self.maxPBKDF2Rounds = maxPBKDF2Rounds
    }

    /// scrypt logN ≤ 22, r ≤ 32, p ≤ 16, memory ≤ 4 GiB, work N·r·p ≤ 2^25; PBKDF2 ≤ 10,000,000 rounds.
    public static let `default` = KDFLimits()

    /// No ceiling: for parameters the caller chose itself and reads itself, never for untrusted input
    /// (sealing applies `default`, so that default readers open what is written).
    public static let unlimited = KDFLimits(
        maxScryptLogN: 56, maxScryptR: .max, maxScryptP: .max, maxScryptMemory: .max, maxScryptWork: .max,
        maxPBKDF2Rounds: .max)
}
