import Crypto
import SecureCore
import SecureKeyStore
import SecureKeys

extension SecureChannel {
    /// The X25519 key pair stored under `tag` in `store`, opened with `sealer` (the way `sf key
    /// --tag` opens keys): the static key of a channel endpoint. `notAnX25519Key` for another
    /// type; `KeyStoreError` (`keyNotFound`, `noPrivateKey`, `sealedKeyDoesNotOpen`, ...) otherwise.
    public static func staticKey(tag: String, in store: KeyStore, sealer: any ItemSealer) throws
        -> Curve25519.KeyAgreement.PrivateKey
    {
        let key = try store.privateKey(tag: tag, sealer: sealer)
        guard case .x25519(let privateKey) = key else { throw SecureChannelError.notAnX25519Key(tag: tag, type: key.type) }
        return privateKey
    }

    /// The X25519 public key under `tag` (partner key or key pair), authenticated through
    /// `sealer`. `notAnX25519Key` for another type; the store's `KeyStoreError` otherwise.
    static func verifiedX25519Key(tag: String, in store: KeyStore, sealer: any ItemSealer) throws
        -> Curve25519.KeyAgreement.PublicKey
    {
        let key = try store.verifiedPublicKey(tag: tag, sealer: sealer)
        guard case .x25519(let publicKey) = key else { throw SecureChannelError.notAnX25519Key(tag: tag, type: key.type) }
        return publicKey
    }

    /// The X25519 key under `tag`, authenticated through `sealer`, or nil when the tag is absent;
    /// other failures as `keyStoreFailed`.
    static func storedKey(tag: String, in store: KeyStore, sealer: any ItemSealer) throws(SecureChannelError)
        -> Curve25519.KeyAgreement.PublicKey?
    {
        let key: AsymmetricPublicKey
        do {
            key = try store.verifiedPublicKey(tag: tag, sealer: sealer)
        } catch .keyNotFound {
            return nil
        } catch {
            throw .keyStoreFailed(error)
        }
        guard case .x25519(let publicKey) = key else { throw .notAnX25519Key(tag: tag, type: key.type) }
        return publicKey
    }

    /// The fingerprint SecureKeys and `sf key fingerprint` give an X25519 public key: SHA-256 of
    /// its SubjectPublicKeyInfo DER.
    public static func fingerprint(of key: Curve25519.KeyAgreement.PublicKey) -> KeyFingerprint {
        AsymmetricPublicKey.x25519(key).fingerprint
    }
}
