extension Age {
    /// The recipient to which files are encrypted that `identity` decrypts, as `age -e -i` uses
    /// an identity file: X25519, post-quantum hybrid and SSH Ed25519 identities have one. A
    /// passphrase identity, or an identity type from outside this module, has none (nil).
    public static func recipient(of identity: any Identity) -> (any Recipient)? {
        switch identity {
        case let identity as X25519Identity: return identity.recipient
        case let identity as SSHEd25519Identity: return identity.recipient
        default:
            if #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *),
                let hybrid = identity as? HybridIdentity
            {
                return hybrid.recipient
            }
            return nil
        }
    }
}
