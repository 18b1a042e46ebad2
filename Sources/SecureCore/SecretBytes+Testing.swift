import Foundation

/// A test-only view of `SecretBytes` zeroization, so tests can prove a key buffer really is
/// overwritten when released (for example by a vault's `purge()`), not merely dropped.
///
/// `SecretBytes` calls `report` from its storage's deinit after zeroing and before deallocating,
/// passing the storage identity and the (zeroed) bytes. With no observer installed the cost is one
/// uncontended lock. Not for production use: the observer sees every released secret buffer.
@_spi(Testing)
public enum SecretBytesZeroization {
    /// Receives the identity of a released buffer and its bytes just after zeroing.
    public typealias Observer = @Sendable (ObjectIdentifier, UnsafeRawBufferPointer) -> Void

    private nonisolated(unsafe) static var observer: Observer?
    private static let lock = NSLock()

    /// Installs `observer` (nil removes it); returns the previous one.
    @discardableResult
    public static func setObserver(_ observer: Observer?) -> Observer? {
        lock.withLock {
            let previous = self.observer
            self.observer = observer
            return previous
        }
    }

    static func report(_ storage: ObjectIdentifier, _ buffer: UnsafeMutableRawBufferPointer) {
        guard let observer = lock.withLock({ self.observer }) else { return }
        observer(storage, UnsafeRawBufferPointer(buffer))
    }
}

extension SecretBytes {
    /// The identity of this value's shared buffer, as passed to `SecretBytesZeroization` observers.
    @_spi(Testing)
    public var storageIdentifier: ObjectIdentifier { ObjectIdentifier(storage) }
}
