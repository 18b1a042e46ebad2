import Foundation

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
