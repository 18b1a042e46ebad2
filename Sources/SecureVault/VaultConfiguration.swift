import Foundation
import SecureCore

extension Vault {
    /// Delays imposed after repeated failed unlock attempts.
    public struct Throttling: Sendable, Equatable {
        /// Failures allowed without delay (5: the sixth attempt in a row waits).
        public var freeAttempts: Int
        /// The wait after failure number `freeAttempts`; it doubles with each further failure.
        public var baseDelay: Duration
        /// The wait never exceeds this.
        public var maximumDelay: Duration

        /// 5 free attempts, then 1 s doubling up to one day.
        public init(freeAttempts: Int = 5, baseDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(86_400)) {
            self.freeAttempts = freeAttempts
            self.baseDelay = baseDelay
            self.maximumDelay = maximumDelay
        }

        /// The wait required after `failures` consecutive failures (zero while within the free attempts).
        public func delay(afterFailures failures: Int) -> Duration {
            guard failures >= freeAttempts else { return .zero }
            let doublings = min(failures - freeAttempts, 62)
            let seconds = min(baseDelay.seconds * pow(2, Double(doublings)), maximumDelay.seconds, 1e12)
            return .milliseconds(Int64((seconds * 1000).rounded(.up)))
        }
    }

    /// Cost, throttling and wiping choices. The defaults suit interactive use.
    public struct Configuration: Sendable {
        /// The KDF for new wraps; nil keeps the parameters of the existing passcode wrap when they
        /// cost at least `sf`'s floor (scrypt log2 N 10 with r 8, or 1,000 PBKDF2 rounds) and stay
        /// within `kdfLimits` (its header is not authenticated until a passcode opens it), and
        /// otherwise, or for a new vault, uses `PasswordKDF.default` (scrypt logN 17).
        public var kdf: PasswordKDF?
        /// Ceilings on the KDF parameters read from the stored wraps.
        public var kdfLimits: KDFLimits = .default
        /// Delays after failed attempts; nil disables counting (tests of the KDF itself only).
        public var throttling: Throttling? = Throttling()
        /// Erase the vault after this many consecutive failures; nil (the default) never erases.
        public var wipeAfterFailures: Int?
        /// The wall clock used for throttling (injectable for tests).
        public var now: @Sendable () -> Date = { Date() }

        /// The defaults: scrypt logN 17 for new vaults, throttling on, no wipe.
        public init(kdf: PasswordKDF? = nil) { self.kdf = kdf }

        var countsFailures: Bool { throttling != nil || wipeAfterFailures != nil }
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
