import Foundation

/// Runs `work(0..<count)` on background threads (as many as the cores but one, at least one) and
/// hands the results out in index order, so a writer can store batch `i` while later batches are
/// still being sealed. Results are released as they are taken; `cancel()` stops work not yet begun.
final class SealingPipeline<Output: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var results: [Result<Output, RecordsError>?]
    private var nextIndex = 0
    private var cancelled = false
    private let work: @Sendable (Int) throws(RecordsError) -> Output

    init(count: Int, work: @escaping @Sendable (Int) throws(RecordsError) -> Output) {
        results = Array(repeating: nil, count: count)
        self.work = work
        let workers = max(1, min(count, ProcessInfo.processInfo.activeProcessorCount - 1))
        for _ in 0..<workers {
            let thread = Thread { [self] in runWorker() }
            thread.name = "SecureRecords sealing"
            thread.start()
        }
    }

    private func runWorker() {
        while let index = claim() {
            let result: Result<Output, RecordsError>
            do throws(RecordsError) {
                result = .success(try work(index))
            } catch {
                result = .failure(error)
            }
            condition.lock()
            results[index] = result
            condition.broadcast()
            condition.unlock()
        }
    }

    private func claim() -> Int? {
        condition.lock()
        defer { condition.unlock() }
        guard !cancelled, nextIndex < results.count else { return nil }
        defer { nextIndex += 1 }
        return nextIndex
    }

    /// The output of `work(index)`, waiting for it; each index is taken once.
    func result(_ index: Int) throws(RecordsError) -> Output {
        condition.lock()
        while results[index] == nil { condition.wait() }
        let result = results[index]!
        results[index] = nil
        condition.unlock()
        return try result.get()
    }

    /// Lets the workers stop after the work they are doing.
    func cancel() {
        condition.lock()
        cancelled = true
        condition.unlock()
    }
}
