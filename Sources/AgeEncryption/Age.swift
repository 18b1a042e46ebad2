import Foundation
import SecureCore

/// age v1 file encryption (c2sp.org/age, age-encryption.org/v1): the header with its recipient
/// stanzas and MAC, the STREAM payload, ASCII armor, and the native recipient types. Files written
/// here are read by `age`, `rage` and every other conforming implementation, and vice versa.
public enum Age {
    /// The length of a file key: 16 bytes from a CSPRNG, fresh for every file.
    public static let fileKeyByteCount = 16

    /// Something a file can be encrypted to: wraps the file key into one or more stanzas.
    ///
    /// Implement this to add a recipient type (for example keys held elsewhere); the protocol is
    /// deliberately small, as in the reference implementation.
    public protocol Recipient: Sendable {
        /// Wraps the 16-byte `fileKey` into stanzas that the matching identity can unwrap. Throws an
        /// `AgeError` (a native recipient fails only if swift-crypto refuses its key).
        func wrap(fileKey: SecretBytes) throws(AgeError) -> [Stanza]
        /// age's recipient labels (age 1.3 `RecipientWithLabels`): a file is encrypted only to
        /// recipients whose label sets are all equal. Classical recipients have none; the
        /// post-quantum hybrid has `postquantum`, so mixing it with a classical recipient (which
        /// would drop the post-quantum protection) is refused; the passphrase recipient has a
        /// random label of its own, so it is always alone.
        var labels: Set<String> { get }
    }

    /// Something a file can be decrypted with: recognizes its own stanzas and unwraps the file key.
    ///
    /// Implement this to add an identity type (for example a key kept in a keychain).
    public protocol Identity: Sendable {
        /// Returns the 16-byte file key when one of `stanzas` is addressed to this identity and
        /// opens; nil when none is. Throws `AgeError.malformedHeader` (or a more specific case)
        /// when a stanza of this identity's type is malformed, which aborts decryption.
        func unwrap(stanzas: [Stanza]) throws(AgeError) -> SecretBytes?
    }

    /// A fresh random file key.
    static func generateFileKey() -> SecretBytes { SecretBytes.random(count: fileKeyByteCount) }
}

extension Age.Recipient {
    /// No labels: the recipient mixes with every other unlabeled (classical) recipient.
    public var labels: Set<String> { [] }
}

extension Age {
    /// The label of post-quantum recipients, as in age 1.3.
    public static let postQuantumLabel = "postquantum"
}
