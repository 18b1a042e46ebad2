import SecureCore
import SecureKeychain
import SecureKeys

/// Every failure ``KeyStore`` reports. Each case names one cause; `description` is a sentence a
/// person can act on and never contains key material.
public enum KeyStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A tag is empty or ends in `.private` (reserved for private key items).
    case invalidTag(String)
    /// The store already holds a key under this tag.
    case duplicateTag(String)
    /// The store holds no key under this tag.
    case keyNotFound(tag: String)
    /// The key under this tag is a public-only partner key.
    case noPrivateKey(tag: String)
    /// The sealer of private keys (for example the vault) is locked.
    case sealerLocked
    /// The sealed private key or kind record does not open: another sealer (vault key or
    /// passphrase), or the stored value was modified.
    case sealedKeyDoesNotOpen(tag: String)
    /// The clear public key stored under this tag is not the public half of its sealed private
    /// key, or not the key its sealed kind record names: the keychain file was modified (for
    /// example the public item swapped).
    case publicKeyMismatch(tag: String)
    /// The key under this tag was stored as a key pair (its sealed kind record says so) but its
    /// private item is gone: the keychain file was modified. It is never used as a partner key.
    case privateKeyMissing(tag: String)
    /// A partner key was asked for authenticated, but it has no sealed kind record: it was stored
    /// without a sealer (or the record was removed), so nothing vouches for it.
    case unauthenticatedKey(tag: String)
    /// A key stored under this tag does not parse as the key it should be (SPKI or PKCS#8): the
    /// keychain file was modified or damaged. The `KeyError` says how.
    case storedKeyMalformed(tag: String, KeyError)
    /// A key could not be generated (for example an RSA size SecureKeys does not make).
    case key(KeyError)
    /// The keychain holding the keys failed (file, storage or lock error): its `KeychainError`.
    case keychain(KeychainError)

    /// What went wrong, in words for a user; never a secret or an internal detail.
    public var description: String {
        switch self {
        case .invalidTag(let tag): "invalid key tag \"\(PrintableText.escaped(tag))\": it must be non-empty and not end in \".private\""
        case .duplicateTag(let tag): "a key with tag \"\(PrintableText.escaped(tag))\" already exists"
        case .keyNotFound(let tag): "no key with tag \"\(PrintableText.escaped(tag))\""
        case .noPrivateKey(let tag): "the key \"\(PrintableText.escaped(tag))\" is a public (partner) key without a private key"
        case .sealerLocked: "the vault is locked: unlock it to use private keys"
        case .sealedKeyDoesNotOpen(let tag):
            "the sealed items of key \"\(PrintableText.escaped(tag))\" do not open: another vault key or passphrase, or the stored item was modified"
        case .publicKeyMismatch(let tag):
            "the stored public key \"\(PrintableText.escaped(tag))\" is not the public half of its sealed private key or the key its sealed record names: "
                + "the keychain file was modified"
        case .privateKeyMissing(let tag):
            "the key pair \"\(PrintableText.escaped(tag))\" has lost its private key (its sealed record says it is a pair): the keychain file was modified"
        case .unauthenticatedKey(let tag):
            "the partner key \"\(PrintableText.escaped(tag))\" is not authenticated by the vault (stored without it): "
                + "check its fingerprint, then store it again with the vault (sf key import --tag \(PrintableText.escaped(tag)) with --passcode-file)"
        case .storedKeyMalformed(let tag, let error):
            "the stored key \"\(PrintableText.escaped(tag))\" does not parse (the keychain file was modified or damaged): \(error.description)"
        case .key(let error): error.description
        case .keychain(let error): "keychain: \(error.description)"
        }
    }
}
