import SecureCore

/// Every failure the age module reports. Each case names one cause, so callers (and `sf`) can react
/// precisely; `description` is a sentence a person can act on and never contains secret data.
public enum AgeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The header does not follow the age v1 grammar, or a stanza addressed to one of the identities
    /// is malformed (wrong argument count, non-canonical base64, wrong body length, low-order share).
    case malformedHeader(String)
    /// The file starts with an age version line for a version this implementation does not read.
    case unsupportedVersion(String)
    /// No identity could unwrap any recipient stanza of the header.
    case noIdentityMatched
    /// A file key was unwrapped but the header MAC does not match: the header was modified.
    case headerMACMismatch
    /// An scrypt stanza asks for a work factor (log2 N) above the configured ceiling; no work was done.
    case workFactorAboveCeiling(found: Int, ceiling: Int)
    /// A payload chunk failed authentication: wrong file key, or the payload was modified.
    /// `chunk` is the zero-based index of the chunk.
    case payloadAuthenticationFailed(chunk: UInt64)
    /// The payload ends before its final chunk (the file was truncated).
    case truncated
    /// Bytes follow the final payload chunk.
    case trailingData
    /// The final chunk is empty although the payload is not (forbidden by the specification).
    case emptyFinalChunk
    /// The ASCII armor is not the strict PEM form the specification requires.
    case armor(String)
    /// A recipient string (`age1…`, `ssh-ed25519 …`, `ssh-rsa …`) could not be parsed.
    case invalidRecipient(String)
    /// An identity string or file (`AGE-SECRET-KEY-1…`, OpenSSH private key) could not be parsed.
    case invalidIdentity(String)
    /// The recipients cannot be combined (an scrypt recipient must be alone), or none were given.
    case invalidRecipientSet(String)
    /// An input or output operation failed: SecureCore's error for the file or descriptor.
    case io(SecureCoreError)
    /// An OpenSSH public key (a recipient line, or the public key of an OpenSSH private key file)
    /// is refused by SecureCore's SSH key codec: not a valid key, or of a type the codec does not
    /// read. `line` is its 1-based line in a recipients file (nil for one recipient string).
    case sshKey(SSHPublicKeyError, line: Int? = nil)
    /// An OpenSSH private key file is refused by SecureCore's reader (passphrase-protected, not
    /// exactly one key, damaged).
    case openSSHKeyFile(OpenSSHKeyFileError)
    /// The passphrase closure of a `ScryptIdentity` failed (for example no terminal to prompt on);
    /// the payload is that error's description.
    case passphraseUnavailable(String)
    /// scrypt could not run for a passphrase stanza (SecureCore's error, for example `outOfMemory`).
    case scrypt(SecureCoreError)
    /// A well-formed key of a type this module cannot use (`ecdsa-sha2-…`, `sk-…`: age has no
    /// recipient type for them). Callers may skip such a key when others remain.
    case unsupportedKeyType(String)

    /// What went wrong, in words for a user; never a secret or an internal detail.
    public var description: String {
        switch self {
        case .malformedHeader(let reason): "malformed age header: \(reason)"
        case .unsupportedVersion(let version): "unsupported age format version \"\(version)\""
        case .noIdentityMatched: "no identity matched any of the recipients"
        case .headerMACMismatch: "header MAC mismatch: the header was modified or the file key is wrong"
        case .workFactorAboveCeiling(let found, let ceiling): "work factor \(found) above ceiling \(ceiling)"
        case .payloadAuthenticationFailed(let chunk):
            "payload chunk \(chunk) failed authentication: the file was modified or corrupted"
        case .truncated: "file truncated: the encrypted payload ends before its final chunk"
        case .trailingData: "trailing data after the end of the encrypted file"
        case .emptyFinalChunk: "the final payload chunk is empty, which the age format forbids"
        case .armor(let reason): "invalid ASCII armor: \(reason)"
        case .invalidRecipient(let reason): "invalid recipient: \(reason)"
        case .invalidIdentity(let reason): "invalid identity: \(reason)"
        case .invalidRecipientSet(let reason): "invalid recipients: \(reason)"
        case .io(let error): error.description
        case .sshKey(let error, let line?): "invalid OpenSSH key: line \(line): \(error.description)"
        case .sshKey(let error, nil): "invalid OpenSSH key: \(error.description)"
        case .openSSHKeyFile(let error): "invalid identity: \(error.description)"
        case .passphraseUnavailable(let reason): reason
        case .scrypt(let error): "scrypt: \(error.description)"
        case .unsupportedKeyType(let reason): "unsupported key type: \(reason)"
        }
    }
}
