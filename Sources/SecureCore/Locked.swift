import Foundation

/// A value guarded by a lock, in a reference, for the two cases `Synchronization.Mutex` does not
/// cover: state that escaping closures share (a `Mutex` is noncopyable, so it cannot be captured),
/// and a non-`Sendable` value such as a database connection whose results leave the lock (`Mutex`
/// asks for `sending` results). Everywhere else the package uses `Mutex`. Like `Mutex`, it owns its
/// value: every access goes through `withLock`, one thread at a time, which makes it `Sendable`.
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
