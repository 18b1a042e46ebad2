/// The one loop that fills a buffer from a source that may hand over fewer bytes than asked for
/// (pipes, sockets, terminals): `FileInput`, the STREAM encryptor and decryptor and age's byte
/// sources all read through it, so a short read is never mistaken for the end of input.
public enum ReadLoop {
    /// Calls `read` on the unfilled rest of `buffer` until the buffer is full or `read` returns 0
    /// (the end of input). Returns the byte count, less than the buffer's size only at the end of
    /// input. Rethrows what `read` throws, with its type.
    @inlinable
    public static func fill<Failure: Error>(
        _ buffer: UnsafeMutableRawBufferPointer, _ read: (UnsafeMutableRawBufferPointer) throws(Failure) -> Int
    ) throws(Failure) -> Int {
        var total = 0
        while total < buffer.count {
            let count = try read(UnsafeMutableRawBufferPointer(rebasing: buffer[total...]))
            if count == 0 { break }
            total += count
        }
        return total
    }
}
