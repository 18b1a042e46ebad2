import Foundation

extension Age {
    /// Parses a recipients file (as `age -R` reads it): one recipient per line, `#` comments and
    /// empty lines ignored. Accepts `age1…` X25519 and `age1pq1…` hybrid recipients and OpenSSH
    /// `ssh-ed25519` public key lines. Throws `invalidRecipient` naming the line that fails, and
    /// `unsupportedKeyType` (naming the line) for an OpenSSH key of a type age cannot use (`ecdsa-sha2-…`).
    public static func parseRecipients(_ text: String) throws(AgeError) -> [any Recipient] {
        var skipped = [SkippedKey]()
        let recipients = try parseRecipients(text, skippingUnsupported: &skipped)
        if let first = skipped.first { throw .unsupportedKeyType("line \(first.line): \(first.reason)") }
        return recipients
    }

    /// Parses a recipients file as above, but skips lines whose key type is unsupported (`ecdsa-sha2-…`),
    /// appending each to `skipped`, as long as at least one recipient remains. Malformed lines are
    /// still errors naming the line (`invalidRecipient`, or `sshKey` with its `line`).
    public static func parseRecipients(
        _ text: String, skippingUnsupported skipped: inout [SkippedKey]
    ) throws(AgeError) -> [any Recipient] {
        var recipients = [any Recipient]()
        var unsupported = [SkippedKey]()
        try forEachLine(text) { number, line throws(AgeError) in
            do throws(AgeError) {
                recipients.append(try parseRecipient(line))
            } catch .invalidRecipient(let reason) {
                throw .invalidRecipient("line \(number): \(reason)")
            } catch .sshKey(let error, _) {
                throw .sshKey(error, line: number)
            } catch .unsupportedKeyType(let reason) {
                unsupported.append(SkippedKey(line: number, reason: reason))
            } catch {
                throw error
            }
        }
        if recipients.isEmpty, let first = unsupported.first {
            throw AgeError.unsupportedKeyType("line \(first.line): \(first.reason)")
        }
        guard !recipients.isEmpty else { throw AgeError.invalidRecipient("the recipients file lists no recipient") }
        skipped += unsupported
        return recipients
    }

    /// A key that `parseRecipients(_:skippingUnsupported:)` left out because its type is not
    /// supported: its 1-based line number and why. Never holds key material.
    public struct SkippedKey: Sendable, Equatable {
        /// The 1-based line number in the file (1 for a whole-file key such as an OpenSSH private key).
        public let line: Int
        /// Why the key is not supported.
        public let reason: String

        /// A skipped key at `line` for `reason`.
        public init(line: Int, reason: String) {
            self.line = line
            self.reason = reason
        }
    }

    /// Parses one recipient string: `age1…`, `age1pq1…`, `ssh-ed25519 …` or `ssh-rsa …`. Other OpenSSH
    /// public key lines (`ecdsa-sha2-…`, `sk-…`) naming their own key type are `unsupportedKeyType`;
    /// an OpenSSH line SecureCore's codec refuses is `sshKey`; anything else `invalidRecipient`.
    public static func parseRecipient(_ text: String) throws(AgeError) -> any Recipient {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if ["ssh-", "ecdsa-sha2-", "sk-"].contains(where: trimmed.hasPrefix) { return try SSHKeys.parseRecipient(trimmed) }
        if trimmed.lowercased().hasPrefix("age1pq1") {
            guard #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *) else {
                throw AgeError.invalidRecipient("hybrid age1pq1… recipients need a newer operating system")
            }
            return try HybridRecipient(trimmed)
        }
        return try X25519Recipient(trimmed)
    }

    /// Parses an identity file (as `age -i` reads it): `AGE-SECRET-KEY-1…` and `AGE-SECRET-KEY-PQ-1…` lines with `#` comments
    /// and empty lines, or one unencrypted OpenSSH private key (`ssh-ed25519` or `ssh-rsa`; another
    /// type throws `unsupportedKeyType`, which callers holding other identities may skip).
    /// Errors never quote the file, which holds secrets: `invalidIdentity` naming the line, or for
    /// an OpenSSH file `openSSHKeyFile`, `sshKey`, `unsupportedKeyType` or `invalidIdentity`.
    public static func parseIdentities(_ text: String) throws(AgeError) -> [any Identity] {
        if text.contains("-----BEGIN OPENSSH PRIVATE KEY-----") { return [try SSHKeys.parseIdentity(text)] }
        var identities = [any Identity]()
        try forEachLine(text) { number, line throws(AgeError) in
            do {
                if line.uppercased().hasPrefix("AGE-SECRET-KEY-PQ-1"),
                    #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *)
                {
                    identities.append(try HybridIdentity(line))
                } else {
                    identities.append(try X25519Identity(line))
                }
            } catch {
                throw AgeError.invalidIdentity("line \(number) is not an AGE-SECRET-KEY-1… identity")
            }
        }
        guard !identities.isEmpty else { throw AgeError.invalidIdentity("the identity file holds no identity") }
        return identities
    }

    /// Calls `body` with each non-empty, non-comment line and its 1-based number, spaces around it
    /// removed, in order, until it throws. One line at a time: a file of millions of empty lines
    /// costs a pass over it, not an array of every line.
    private static func forEachLine(_ text: String, _ body: (Int, String) throws(AgeError) -> Void) throws(AgeError) {
        var number = 0
        var start = text.startIndex
        while true {
            // `\r\n` is one Character in Swift, so every kind of line ending ends a line.
            let end = text[start...].firstIndex(where: \.isNewline) ?? text.endIndex
            number += 1
            if start != end {
                let line = text[start..<end].trimmingCharacters(in: .whitespaces)
                if !line.isEmpty, !line.hasPrefix("#") { try body(number, line) }
            }
            guard end != text.endIndex else { return }
            start = text.index(after: end)
        }
    }
}
