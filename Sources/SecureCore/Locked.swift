import Foundation

/// A value guarded by a lock, for the modules of this package (`Synchronization.Mutex` needs
/// macOS 15 / iOS 18; the package supports macOS 14 / iOS 17). Like `Mutex`, it owns its value:
/// every access goes through `withLock`, one thread at a time, which makes it `Sendable`.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// A lock guarding `value`.
    package init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
