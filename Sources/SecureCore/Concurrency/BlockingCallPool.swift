import Foundation
#if canImport(CLinuxExtras)
import CLinuxExtras
#endif

/// Threads of its own for calls that block (a database round trip, a file lock, a passcode KDF),
/// awaited from Swift concurrency: `try await pool.run { ... }` hands the call to one of at most
/// `width` threads and suspends the task, so Swift's cooperative threads (as many as there are
/// cores) never wait on I/O. Calls beyond `width` wait in a first-in, first-out queue and hold no
/// thread while they wait. A thread starts when a call finds none idle, and every thread ends once
/// the pool is released and its queue is empty.
///
/// A call, once queued, runs to completion even if the awaiting task is cancelled: the calls it
/// serves (a transaction, a KDF, an attempt counter) cannot stop half-way.
package final class BlockingCallPool: Sendable {
    private let core: Core
    /// The most threads the pool runs, so the most calls that run at once.
    package let width: Int

    /// A pool of at most `width` threads (at least 1); `name` names them (for a debugger, `perf`).
    package init(width: Int, name: String) {
        self.width = max(1, width)
        core = Core(width: self.width, name: name)
    }

    deinit { core.stop() }

    /// Runs `body` on one of the pool's threads and resumes with its result or its error.
    package func run<R: Sendable, Failure: Error>(
        _ body: @escaping @Sendable () throws(Failure) -> R
    ) async throws(Failure) -> R {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<R, Failure>, Never>) in
            core.submit { continuation.resume(returning: Result { () throws(Failure) -> R in try body() }) }
        }
        return try result.get()
    }

    /// The queue and the threads. The threads hold the core, not the pool, so that releasing the
    /// pool stops them.
    private final class Core: @unchecked Sendable {  // its state is read and written under `condition` only
        private let condition = NSCondition()
        // Guarded by `condition`.
        /// The queue: taken jobs are set to nil at once, so that what they hold (a record's fields,
        /// a password) goes with them rather than staying until the array is compacted.
        private var jobs: [(@Sendable () -> Void)?] = []
        private var next = 0
        private var threads = 0
        private var idle = 0
        private var stopped = false
        private let width: Int
        private let name: String

        init(width: Int, name: String) {
            self.width = width
            self.name = name
        }

        func submit(_ job: @escaping @Sendable () -> Void) {
            let start = condition.withLock { () -> Bool in
                jobs.append(job)
                // A waiting thread takes the job; a new one starts only when every thread is busy.
                if idle > jobs.count - next - 1 {
                    condition.signal()
                    return false
                }
                guard threads < width else { return false }
                threads += 1
                return true
            }
            if start {
                let thread = Thread { [self] in
                    #if canImport(CLinuxExtras)
                    // Named for `top -H`, `perf` and debuggers (Linux keeps 15 bytes). Foundation's
                    // `Thread.name` may reach the system thread only after it has started.
                    _ = pthread_setname_np(pthread_self(), Self.systemName(name))
                    #endif
                    work()
                }
                thread.name = name
                thread.start()
            }
        }

        /// `name` cut to the 15 bytes Linux keeps, at a character boundary.
        static func systemName(_ name: String) -> String {
            var cut = ""
            for character in name where cut.utf8.count + character.utf8.count <= 15 { cut.append(character) }
            return cut
        }

        func stop() {
            condition.withLock {
                stopped = true
                condition.broadcast()
            }
        }

        private func work() {
            while let job = take() { job() }
        }

        /// The next queued job, waiting for one; nil once the pool is stopped and nothing is queued.
        private func take() -> (@Sendable () -> Void)? {
            condition.withLock {
                while next == jobs.count {
                    if stopped {
                        threads -= 1
                        return nil
                    }
                    idle += 1
                    condition.wait()
                    idle -= 1
                }
                let job = jobs[next]
                jobs[next] = nil
                next += 1
                if next == jobs.count || next >= 1024 {
                    // Drop the jobs taken, keeping the queue's memory bounded by what is waiting.
                    jobs.removeFirst(next)
                    next = 0
                }
                return job
            }
        }
    }
}
