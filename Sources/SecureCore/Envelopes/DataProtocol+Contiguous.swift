import Foundation

extension DataProtocol {
    /// Calls `body` with these bytes in one contiguous buffer: in place when they are stored so
    /// (`Data`, arrays, buffers), otherwise copied once and the copy zeroed afterwards (the bytes
    /// may be a plaintext). Sealing works on buffers, so that a bulk writer's many small values go
    /// through no generic per-byte path.
    @inlinable
    package func withContiguousBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        if let result = withContiguousStorageIfAvailable({ bytes in Result { () throws(E) -> R in try body(UnsafeRawBufferPointer(bytes)) } }) {
            return try result.get()
        }
        var copy = Array(self)
        defer { copy.withUnsafeMutableBytes { Zeroization.zero($0) } }
        return try copy.withUnsafeBytes { bytes in Result { () throws(E) -> R in try body(bytes) } }.get()
    }
}
