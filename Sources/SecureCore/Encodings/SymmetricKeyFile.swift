import Foundation

/// A 32-byte symmetric key kept in a file, by the one rule every key file of SecureFoundation
/// follows (docs/FORMATS.md, "Other text inputs"): a file of exactly 32 bytes is the key itself;
/// any other file is decoded as UTF-8, TRIM-trimmed, and must then be 64 hex digits (either case),
/// as `sf random` prints. The rule lives here so that `sf` and Swift callers read the same files.
public enum SymmetricKeyFile {
    /// The longest file read: a hex key with generous whitespace around it.
    static let maximumFileSize = 4096

    /// The key in a key file's `contents`. Throws `SecureCoreError.malformedEncoding` for anything
    /// else; the message names `name` (a path, for a person to act on), never the contents. The
    /// caller owns `contents` and should wipe it; nothing is kept besides the returned key.
    public static func key(from contents: Data, name: String = "key file") throws(SecureCoreError) -> SecretBytes {
        if contents.count == Envelope.keyByteCount { return SecretBytes(contents) }
        let text = String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count == 2 * Envelope.keyByteCount, var bytes = try? Hex.decode(text) else {
            throw notAKeyFile(name)
        }
        defer { bytes.resetBytes(in: 0..<bytes.count) }
        return SecretBytes(bytes)
    }

    /// The key in the file at `path` (`key(from:name:)`), read whole and wiped from memory after
    /// use. A file over 4 KiB is refused without being read further.
    /// Throws `SecureCoreError.io` when the file cannot be read, `malformedEncoding` when it is not a key file.
    public static func read(path: String) throws(SecureCoreError) -> SecretBytes {
        let file = try FileInput(path: path)
        var contents = Data()
        defer { contents.resetBytes(in: 0..<contents.count) }
        while contents.count <= maximumFileSize {
            var chunk = try file.read(upTo: maximumFileSize + 1 - contents.count)
            defer { chunk.resetBytes(in: 0..<chunk.count) }
            if chunk.isEmpty { break }
            contents.append(chunk)
        }
        guard contents.count <= maximumFileSize else { throw notAKeyFile(path) }
        return try key(from: contents, name: path)
    }

    private static func notAKeyFile(_ name: String) -> SecureCoreError {
        .malformedEncoding("\(name): a key file holds \(Envelope.keyByteCount) raw bytes or \(2 * Envelope.keyByteCount) hex digits")
    }
}
