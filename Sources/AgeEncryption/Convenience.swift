import Foundation
import SecureCore

extension Age {
    /// Encrypts `plaintext` in memory to `recipients`.
    /// Throws `AgeError.invalidRecipientSet` (no recipient, ones that cannot be mixed, or stanzas a
    /// reader would refuse), or what a recipient's `wrap` throws.
    public static func encrypt(_ plaintext: some DataProtocol, to recipients: [any Recipient], armored: Bool = false) throws -> Data {
        let sink = DataSink()
        let encryptor = try Encryptor(recipients: recipients, to: sink, armored: armored)
        try encryptor.write(plaintext)
        try encryptor.finish()
        return sink.data
    }

    /// Decrypts `ciphertext` in memory; returns nothing unless the whole file authenticated.
    /// Throws `AgeError`: a header case (`malformedHeader`, `noIdentityMatched`, `headerMACMismatch`, ...) or a payload case (`payloadAuthenticationFailed`, `truncated`, `trailingData`, ...).
    public static func decrypt(_ ciphertext: Data, identities: [any Identity], encoding: Encoding = .detect) throws -> Data {
        let sink = DataSink()
        try Decryptor(from: DataSource(ciphertext), identities: identities, encoding: encoding).decrypt(to: sink)
        return sink.data
    }

    /// Encrypts the file at `inputPath` into `outputPath` with bounded memory. The output appears
    /// complete or not at all (temporary file, fsync, rename); on error nothing is left behind.
    /// Throws as `encrypt(_:to:armored:)`, or `AgeError.io` for the files.
    public static func encryptFile(
        at inputPath: String, to outputPath: String, recipients: [any Recipient], armored: Bool = false
    ) throws {
        let source = try DescriptorSource(path: inputPath)
        try atomically(outputPath) { sink in
            try Encryptor(recipients: recipients, to: sink, armored: armored).encrypt(from: source)
        }
    }

    /// Decrypts the file at `inputPath` into `outputPath` with bounded memory. The plaintext file
    /// appears only when the whole input authenticated; on any error nothing is left behind.
    /// Throws as `decrypt(_:identities:encoding:)`, or `AgeError.io` for the files.
    public static func decryptFile(
        at inputPath: String, to outputPath: String, identities: [any Identity], encoding: Encoding = .detect
    ) throws {
        let source = try DescriptorSource(path: inputPath)
        try atomically(outputPath) { sink in
            try Decryptor(from: source, identities: identities, encoding: encoding).decrypt(to: sink)
        }
    }

    /// Writes through `OutputDestination`: a file atomically, a device or pipe in place.
    private static func atomically(_ path: String, _ body: (ByteSink) throws -> Void) throws {
        do {
            try OutputDestination.write(to: path) { output in
                try body(DescriptorSink(descriptor: output.descriptor, name: path))
            }
        } catch let error as SecureCoreError {
            throw AgeError.io(error)
        }
    }
}
