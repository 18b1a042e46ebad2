#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import Foundation
import Synchronization

/// The temporary files `AtomicFile` has created and not yet renamed or removed, so that a process
/// ended by a signal can remove them instead of leaving a `.NAME.tmp-…` file holding a prefix of
/// its output (for a decryption, verified plaintext).
public enum TemporaryFiles {
    /// Installs handlers for SIGINT, SIGTERM and SIGHUP that run the actions of `whileRunning`,
    /// remove every pending temporary file and then end the process by the same signal (its
    /// default action, so the exit status still says which signal). Call once, early, in a
    /// command-line program; calling again does nothing.
    /// The handlers run on a dispatch queue, not in signal context, so they may take locks.
    /// SIGKILL cannot be caught: after it a temporary file can remain (never the target file
    /// half-written).
    public static func removeOnTerminationSignals() {
        registry.installHandlers()
    }

    /// Runs `body`; if a termination signal ends the process meanwhile (with the handlers of
    /// `removeOnTerminationSignals` installed), `action` runs first. For what a signal must not
    /// leave behind outside the process: a terminal with echo off, a spooled copy of secret input.
    public static func whileRunning<Result, Failure: Error>(
        onTerminationSignal action: @escaping @Sendable () -> Void, _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let token = registry.insert(action)
        defer { registry.removeAction(token) }
        return try body()
    }

    static let registry = Registry()

    final class Registry: Sendable {
        private struct State {
            var paths = Set<String>()
            var actions: [UInt64: @Sendable () -> Void] = [:]
            var nextAction: UInt64 = 0
            var sources: [any DispatchSourceSignal] = []
        }

        private let state = Mutex(State())

        func insert(_ path: String) { state.withLock { _ = $0.paths.insert(path) } }
        func remove(_ path: String) { state.withLock { _ = $0.paths.remove(path) } }

        func insert(_ action: @escaping @Sendable () -> Void) -> UInt64 {
            state.withLock {
                $0.nextAction += 1
                $0.actions[$0.nextAction] = action
                return $0.nextAction
            }
        }

        func removeAction(_ token: UInt64) { state.withLock { _ = $0.actions.removeValue(forKey: token) } }

        /// Runs every registered action, unlinks every registered path, and ends the process by
        /// `signalNumber`, all under the lock: a second signal's handler waits (and so never ends
        /// the process in the middle of an action), `whileRunning` cannot return (and its caller
        /// close what an action uses) while the actions run, and no rename races the removal.
        func terminate(by signalNumber: Int32) -> Never {
            state.withLock { state in
                for (_, action) in state.actions.sorted(by: { $0.key < $1.key }) { action() }
                for path in state.paths { unlink(path) }
                Self.terminate(signalNumber)
            }
        }

        /// Ends the process by `signalNumber`'s default action. The dispatch source keeps the signal
        /// blocked in every thread, so it is unblocked in this thread and raised here.
        private static func terminate(_ signalNumber: Int32) -> Never {
            signal(signalNumber, SIG_DFL)
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, signalNumber)
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            raise(signalNumber)
            _exit(128 + signalNumber)
        }

        func installHandlers() {
            state.withLock { state in
                guard state.sources.isEmpty else { return }
                for signalNumber in [SIGINT, SIGTERM, SIGHUP] {
                    // Ignored at the process level so that the dispatch source receives it.
                    signal(signalNumber, SIG_IGN)
                    let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
                    source.setEventHandler { [self] in terminate(by: signalNumber) }
                    source.resume()
                    state.sources.append(source)
                }
            }
        }
    }
}
