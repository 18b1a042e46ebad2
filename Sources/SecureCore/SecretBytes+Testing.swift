import Synchronization

// Compiled into debug builds only (the tests' builds): a release build has no observer and no lock
// on the release path of every secret.
#if DEBUG

/// A test-only view of `SecretBytes` zeroization, so tests can prove a key buffer really is
/// overwritten when released (for example by a vault's `purge()`), not merely dropped.
///
/// `SecretBytes` calls `report` from its storage's deinit after zeroing and before deallocating,
/// passing the storage identity and the (zeroed) bytes. With no observer installed the cost is one
/// uncontended lock, in debug builds only (release builds compile none of this). Not for production
/// use: the observer sees every released secret buffer.
@_spi(Testing)
public enum SecretBytesZeroization {
    /// Receives the identity of a released buffer and its bytes just after zeroing.
    public typealias Observer = @Sendable (ObjectIdentifier, UnsafeRawBufferPointer) -> Void

    private static let observer = Mutex<Observer?>(nil)

    /// Installs `observer` (nil removes it); returns the previous one.
    @discardableResult
    public static func setObserver(_ observer: Observer?) -> Observer? {
        self.observer.withLock { current in
            let previous = current
            current = observer
            return previous
        }
    }

    static func report(_ storage: ObjectIdentifier, _ buffer: UnsafeMutableRawBufferPointer) {
        guard let observer = observer.withLock({ $0 }) else { return }
        observer(storage, UnsafeRawBufferPointer(buffer))
    }
}

extension SecretBytes {
    /// The identity of this value's shared buffer, as passed to `SecretBytesZeroization` observers.
    @_spi(Testing)
    public var storageIdentifier: ObjectIdentifier { ObjectIdentifier(storage) }
}
#endif
