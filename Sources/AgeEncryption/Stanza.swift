import Foundation

extension Age {
    /// One recipient stanza of an age header: its arguments (the first names the recipient type) and
    /// its raw body. Recipients produce stanzas; identities recognize theirs among them.
    public struct Stanza: Sendable, Equatable {
        /// The space-separated arguments of the `->` line; each is non-empty printable ASCII.
        public var arguments: [String]
        /// The decoded body (base64 in the file, wrapped at 64 columns).
        public var body: Data

        /// A stanza with `arguments` (at least one, each 1+ printable ASCII characters other than
        /// space) and `body`; `Encryptor` refuses a stanza that breaks this rule.
        public init(arguments: [String], body: Data) {
            self.arguments = arguments
            self.body = body
        }

        /// The recipient type: the first argument.
        public var type: String { arguments.first ?? "" }
    }
}
