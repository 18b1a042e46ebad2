import Crypto
import SecureCore
import SecureKeyStore
import SecureKeys
import Synchronization

extension SecureChannel {
    /// What a party expects of its peer's static key. The handshake proves the peer holds the
    /// private key; this policy decides whether that key is the right one. A peer that fails it
    /// gets a typed error and a closed connection, and nothing it sent is delivered.
    ///
    /// Fingerprints are SecureKeys' `KeyFingerprint`: SHA-256 of the X25519 key's
    /// SubjectPublicKeyInfo DER, the value `sf key fingerprint` shows.
    public struct PeerTrust: Sendable {
        enum Rule: Sendable {
            case pinned(Curve25519.KeyAgreement.PublicKey)
            case fingerprint(KeyFingerprint)
            case firstUse(FirstUse)
            case anyAuthenticatedKey
            case anonymous
        }

        let rule: Rule

        /// Trust on first use: where the key is kept, and the key once known (read through the
        /// sealer, or stored, once per policy: with a passphrase sealer every open is a KDF run,
        /// which no connection should cost, least of all one that has not said a word).
        final class FirstUse: Sendable {
            let tag: String
            let store: KeyStore
            let sealer: any ItemSealer
            let confirm: (@Sendable (KeyFingerprint) -> Bool)?
            private let known = Mutex<Curve25519.KeyAgreement.PublicKey?>(nil)

            init(tag: String, store: KeyStore, sealer: any ItemSealer, confirm: (@Sendable (KeyFingerprint) -> Bool)?) {
                (self.tag, self.store, self.sealer, self.confirm) = (tag, store, sealer, confirm)
            }

            /// The key under the tag, authenticated, or nil when there is none yet.
            func storedKey() throws(SecureChannelError) -> Curve25519.KeyAgreement.PublicKey? {
                if let key = known.withLock({ $0 }) { return key }
                let key = try SecureChannel.storedKey(tag: tag, in: store, sealer: sealer)
                if let key { known.withLock { $0 = key } }
                return key
            }

            /// Stores `key` as the partner key under the tag, sealed; when another connection
            /// stored one first, accepts only if it is `key` (`peerKeyMismatch` otherwise).
            func save(_ key: Curve25519.KeyAgreement.PublicKey) throws(SecureChannelError) {
                do {
                    try store.storePartnerKey(.x25519(key), tag: tag, sealer: sealer)
                    known.withLock { $0 = key }
                } catch .duplicateTag {
                    guard let stored = try storedKey() else { throw .keyStoreFailed(.duplicateTag(tag)) }
                    let expected = SecureChannel.fingerprint(of: stored)
                    let actual = SecureChannel.fingerprint(of: key)
                    guard expected == actual else { throw .peerKeyMismatch(expected: expected.description, actual: actual) }
                } catch {
                    throw .keyStoreFailed(error)
                }
            }
        }

        /// Accepts only `key`. With patterns that need the peer's key in advance (IK, NK, XK, KK)
        /// the key is also used for the handshake.
        public static func pinned(_ key: Curve25519.KeyAgreement.PublicKey) -> PeerTrust { PeerTrust(rule: .pinned(key)) }

        /// Accepts only the X25519 key stored under `tag` in `store` (a partner key or a key pair),
        /// authenticated through `sealer` (`KeyStore.verifiedPublicKey`): whoever can write the
        /// store's file but lacks the sealer cannot swap the key the channel trusts. Throws
        /// `notAnX25519Key` for another type, and the store's `KeyStoreError` otherwise:
        /// `keyNotFound`, `unauthenticatedKey` for a partner key stored without a sealer (import it
        /// again with one), `publicKeyMismatch` for a swapped key, ...
        public static func pinned(tag: String, in store: KeyStore, sealer: any ItemSealer) throws -> PeerTrust {
            try .pinned(SecureChannel.verifiedX25519Key(tag: tag, in: store, sealer: sealer))
        }

        /// Accepts only a key whose SHA-256 SPKI fingerprint is `fingerprint`.
        public static func fingerprint(_ fingerprint: KeyFingerprint) -> PeerTrust { PeerTrust(rule: .fingerprint(fingerprint)) }

        /// Trust on first use: when `tag` already names a key in `store`, only that key is
        /// accepted, authenticated through `sealer` as `pinned(tag:in:sealer:)` does; otherwise
        /// the peer's key is accepted (if `confirm`, when given, returns true for its fingerprint)
        /// and stored as a partner key under `tag`, sealed through `sealer`, once the handshake
        /// completes. When two first connections race, the one that stores second is accepted
        /// only if its peer's key is the one stored. `confirm` runs on the connection's event loop:
        /// it must not block (ask before connecting, or answer from memory).
        public static func trustOnFirstUse(
            tag: String, in store: KeyStore, sealer: any ItemSealer, confirm: (@Sendable (KeyFingerprint) -> Bool)? = nil
        ) -> PeerTrust {
            PeerTrust(rule: .firstUse(FirstUse(tag: tag, store: store, sealer: sealer, confirm: confirm)))
        }

        /// Accepts any peer that proves it holds a static key (typical for a server that learns
        /// who its clients are from `Connection.peerFingerprint`).
        public static let anyAuthenticatedKey = PeerTrust(rule: .anyAuthenticatedKey)

        /// Expects no peer authentication at all (NN, or NK seen from the responder).
        public static let anonymous = PeerTrust(rule: .anonymous)

        /// Whether the policy expects no peer authentication (`anonymous`).
        var isAnonymous: Bool { if case .anonymous = rule { true } else { false } }

        /// The key to use as the peer's pre-message key (IK, NK, ...), if the policy names one.
        func knownKey() throws(SecureChannelError) -> Curve25519.KeyAgreement.PublicKey? {
            switch rule {
            case .pinned(let key): return key
            case .firstUse(let firstUse): return try firstUse.storedKey()
            case .fingerprint, .anyAuthenticatedKey, .anonymous: return nil
            }
        }

        /// The verdict on the peer's proven static key (nil when the pattern gives none): where
        /// to store the key after the handshake (trust on first use), or nil. Throws the reason
        /// for rejection.
        func evaluate(_ key: Curve25519.KeyAgreement.PublicKey?) throws(SecureChannelError) -> FirstUse? {
            if case .anonymous = rule { return nil }
            guard let key else { throw .peerNotAuthenticated }
            let actual = SecureChannel.fingerprint(of: key)
            func require(_ expected: KeyFingerprint) throws(SecureChannelError) {
                guard expected == actual else { throw .peerKeyMismatch(expected: expected.description, actual: actual) }
            }
            switch rule {
            case .pinned(let pinned): try require(SecureChannel.fingerprint(of: pinned))
            case .fingerprint(let expected): try require(expected)
            case .firstUse(let firstUse):
                if let stored = try firstUse.storedKey() {
                    try require(SecureChannel.fingerprint(of: stored))
                } else {
                    guard firstUse.confirm?(actual) ?? true else { throw .peerRejected(actual: actual) }
                    return firstUse
                }
            case .anyAuthenticatedKey, .anonymous: break
            }
            return nil
        }
    }
}
