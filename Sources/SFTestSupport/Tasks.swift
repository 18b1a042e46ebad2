import Foundation
import SecureCore

extension TestSupport {
    /// Runs `body` on a new thread of its own and returns its result: for a test's blocking wait
    /// (a semaphore, a poll of the server) from async code. Not Dispatch's global queue, whose few
    /// threads other tests may hold blocked, nor one of Swift's cooperative threads.
    public static func onOwnThread<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}

/// A task executor over `width` serial Dispatch queues, each with a thread of its own: for test
/// tasks that must not wait for Swift's cooperative threads, which the synchronous tests of other
/// suites running in the process hold while they block. With width 1, the tasks' jobs run one at
/// a time in the order they were enqueued.
public final class QueueExecutor: TaskExecutor, Sendable {
    private let queues: [DispatchQueue]
    private let next = Locked(0)

    public init(width: Int, label: String) {
        queues = (0..<max(1, width)).map { DispatchQueue(label: "\(label).\($0)") }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let queue = queues[next.withLock { (n: inout Int) -> Int in
            defer { n = (n + 1) % queues.count }
            return n
        }]
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// A throwing call run on a thread of its own (not Dispatch's global queue nor a cooperative
/// thread), started at once: for a test that watches what the call waits for while it runs, or
/// plays a party (a raw server or client) beside the code under test. Started from a `Task`
/// instead, such a party would first wait for a cooperative thread, which other suites'
/// synchronous tests may hold for minutes, while the other party's deadline ran. Unchecked
/// Sendable: its result is behind `Locked`.
public final class BackgroundCall<Value: Sendable, Failure: Error>: @unchecked Sendable {
    private let outcome = Locked<Result<Value, Failure>?>(nil)
    private let ended = DispatchSemaphore(value: 0)

    /// Starts `body`.
    public init(_ body: @escaping @Sendable () throws(Failure) -> Value) {
        Thread.detachNewThread { [outcome, ended] in
            let result = Result { () throws(Failure) in try body() }
            outcome.withLock { $0 = result }
            ended.signal()
        }
    }

    /// Whether the call has returned or thrown.
    public var hasEnded: Bool { outcome.withLock { $0 != nil } }

    /// The call's result, waited for until `timeout`; nil if it is still running then.
    public func result(waitingUntil timeout: DispatchTime) -> Result<Value, Failure>? {
        if ended.wait(timeout: timeout) == .success { ended.signal() }  // a later call returns at once
        return outcome.withLock { $0 }
    }

    /// The call's result once it ends, awaited on a thread of its own (no cooperative thread is
    /// held while the call runs).
    public func value() async throws -> Value {
        try await TestSupport.onOwnThread { [self] in
            guard let outcome = result(waitingUntil: .distantFuture) else { preconditionFailure("a wait without a deadline ended") }
            return try outcome.get()
        }
    }
}

/// Events in the order they happened, appended from several tasks or threads.
public final class EventLog: Sendable {
    private let events = Locked<[String]>([])

    public init() {}

    public func append(_ event: String) { events.withLock { $0.append(event) } }
    public var entries: [String] { events.withLock { $0 } }
}
