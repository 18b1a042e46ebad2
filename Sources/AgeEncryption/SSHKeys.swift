import Foundation

/// OpenSSH key parsing for the ssh-ed25519 and ssh-rsa recipient types.
enum SSHKeys {
    static func parseRecipient(_ line: String) throws -> any Age.Recipient {
        throw AgeError.invalidRecipient("SSH recipients are not supported yet")
    }

    static func parseIdentity(_ text: String) throws -> any Age.Identity {
        throw AgeError.invalidIdentity("SSH identities are not supported yet")
    }
}
