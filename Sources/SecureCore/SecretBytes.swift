#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Crypto
import Foundation

/// Key material that is zeroed when its last copy is released, compared in constant time, and never
/// shown by `description`, `debugDescription` or reflection.
///
/// `SecretBytes` is immutable: copies share one buffer, which is overwritten with zeros (through a
/// call the optimizer cannot remove) when the last copy goes away.
public struct SecretBytes: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable, ContiguousBytes
{
    /// Unchecked Sendable: the buffer pointer is immutable after init, and only deinit writes
    /// (zeroing), when no other reference exists.
    final class Storage: @unchecked Sendable {
        let buffer: UnsafeMutableRawBufferPointer

        init(count: Int) {
            buffer = .allocate(byteCount: max(count, 1), alignment: 16)
            if count == 0 { buffer[0] = 0 }
            self.count = count
        }

        let count: Int

        deinit {
            Zeroization.zero(buffer)
            #if DEBUG
            SecretBytesZeroization.report(ObjectIdentifier(self), buffer)
            #endif
            buffer.deallocate()
        }
    }

    let storage: Storage

    /// Copies `bytes` into a new zeroizing buffer. The caller remains responsible for its own copy.
    public init<D: DataProtocol>(_ bytes: D) {
        storage = Storage(count: bytes.count)
        if bytes.count > 0 {
            _ = bytes.copyBytes(to: UnsafeMutableRawBufferPointer(rebasing: storage.buffer[0..<bytes.count]))
        }
    }

    /// Creates `count` bytes filled by `initializer`, without an intermediate copy. Throws what
    /// `initializer` throws (typed: `E`).
    public init<E: Error>(count: Int, initializingWith initializer: (UnsafeMutableRawBufferPointer) throws(E) -> Void) throws(E) {
        storage = Storage(count: count)
        try initializer(UnsafeMutableRawBufferPointer(rebasing: storage.buffer[0..<count]))
    }

    /// Copies the bytes of a swift-crypto key.
    public init(_ key: SymmetricKey) {
        self = key.withUnsafeBytes { source in SecretBytes(count: source.count) { $0.copyMemory(from: source) } }
    }

    /// `count` cryptographically secure random bytes.
    public static func random(count: Int) -> SecretBytes {
        SecretBytes(count: count) { SecureRandom.fill($0) }
    }

    /// The number of bytes.
    public var count: Int { storage.count }

    /// Runs `body` with the bytes (valid only inside `body`; do not copy them out unwiped). Throws
    /// what `body` throws (typed: `E`).
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage.buffer[0..<storage.count]))
    }

    /// A swift-crypto key holding a copy of these bytes (swift-crypto zeroes its own copy).
    public var symmetricKey: SymmetricKey { withUnsafeBytes { SymmetricKey(data: $0) } }

    /// Constant-time comparison: the time taken depends only on the lengths.
    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in ConstantTime.equal(a, b) } }
    }

    /// The length only: a secret never reaches a log or a string interpolation.
    public var description: String { "SecretBytes(\(count) bytes, redacted)" }
    /// The length only, as `description`.
    public var debugDescription: String { description }
    /// The length only: `dump` and debuggers show no bytes.
    public var customMirror: Mirror { Mirror(self, children: ["count": count]) }
}

/// Comparisons whose running time does not depend on where inputs differ.
public enum ConstantTime {
    /// True when both buffers have the same length and contents. Only the lengths affect timing.
    public static func equal<A: ContiguousBytes, B: ContiguousBytes>(_ a: A, _ b: B) -> Bool {
        a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in
                guard x.count == y.count else { return false }
                var difference: UInt8 = 0
                for i in 0..<x.count { difference |= x[i] ^ y[i] }
                return difference == 0
            }
        }
    }
}

@usableFromInline package enum Zeroization {
    /// Overwrites `buffer` with zeros in a way the compiler may not elide.
    @usableFromInline package static func zero(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        #if canImport(Darwin)
        _ = memset_s(base, buffer.count, 0, buffer.count)
        #elseif canImport(Glibc) || canImport(Musl)
        explicit_bzero(base, buffer.count)
        #else
        // Volatile-equivalent fallback: write through an opaque pointer the optimizer cannot see into.
        let p = base.assumingMemoryBound(to: UInt8.self)
        for i in 0..<buffer.count { withExtendedLifetime(p) { p.advanced(by: i).pointee = 0 } }
        #endif
    }
}

extension Data {
    /// Overwrites the bytes of this value with zeros (for temporary copies of secrets).
    mutating func zeroize() {
        withUnsafeMutableBytes { Zeroization.zero($0) }
    }
}
