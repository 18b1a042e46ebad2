/// A secret kept in a file as age, OpenSSH and libpq's tools keep them: the file's first line,
/// without its line ending (LF or CRLF). What follows the first line is ignored, so a file may end
/// with a newline or carry a comment below. The one rule for every `--…-file` option of `sf` and
/// for the tests.
public enum SecretFile {
    /// The longest first line read (64 KiB): a secret is a line, so a longer one means the wrong file.
    public static let maximumLineLength = 64 * 1024

    /// The first line of the file at `path`, read straight into zeroizing storage (the scratch
    /// buffer is zeroed too). Reads at most `maximumLineLength` + 2 bytes, room for the longest
    /// line and its CR LF (a pipe such as `/dev/stdin` until it ends or that much arrived): a line
    /// not ended within them is longer than the longest.
    /// Throws `SecureCoreError.io` when the file cannot be read, `invalidParameter` when its first
    /// line is empty or longer than `maximumLineLength`.
    public static func read(path: String) throws(SecureCoreError) -> SecretBytes {
        let input = try FileInput(path: path)
        var count = 0
        let capacity = maximumLineLength + 2
        let scratch = try SecretBytes(count: capacity) { (buffer: UnsafeMutableRawBufferPointer) throws(SecureCoreError) in
            count = try input.read(into: buffer)
        }
        return try scratch.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws(SecureCoreError) -> SecretBytes in
            let read = UnsafeRawBufferPointer(rebasing: bytes[0..<count])
            let line = firstLine(read)
            let unended = count == capacity && !read.contains(UInt8(ascii: "\n"))
            guard line.count <= maximumLineLength, !unended else {
                throw .invalidParameter("\(path): the first line is over \(maximumLineLength / 1024) KiB, so it is not a secret")
            }
            guard !line.isEmpty else { throw .invalidParameter("\(path): the first line, the secret, is empty") }
            return SecretBytes(line)
        }
    }

    /// The first line of `bytes`, without its line ending.
    public static func firstLine(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var end = bytes.firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
        if end > bytes.startIndex, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[..<end])
    }
}
