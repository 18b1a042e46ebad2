import Foundation
import SFTestSupport
import Testing

@testable import SecureCore

/// `BlockingCallPool`: blocking calls awaited from tasks run on at most `width` threads of the
/// pool's own, come back with their typed errors, and the threads end with the pool.
@Suite struct BlockingCallPoolTests {
    enum Refusal: Error, Equatable { case refused(Int) }

    /// Twelve calls that each block until the test lets one go: two run at a time (the width),
    /// never more, and every one runs once.
    @Test func noMoreCallsRunAtOnceThanTheWidth() async throws {
        let pool = BlockingCallPool(width: 2, name: "sf-test-width")
        let active = Locked(0)
        let mostActive = Locked(0)
        let started = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let calls = 12
        // The calling tasks run on threads of their own: other suites' synchronous tests may hold
        // every one of Swift's cooperative threads for minutes.
        let executor = QueueExecutor(width: 2, label: "BlockingCallPoolTests")
        try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<calls {
                group.addTask(executorPreference: executor) {
                    try await pool.run { () throws(Refusal) -> Int in
                        let now = active.withLock { $0 += 1; return $0 }
                        mostActive.withLock { $0 = max($0, now) }
                        started.signal()
                        // The fallback deadline only keeps a broken pool from hanging the run.
                        _ = gate.wait(timeout: .now() + 120)
                        active.withLock { $0 -= 1 }
                        return i
                    }
                }
            }
            // Two calls start and wait at the gate; then one is let go each time another starts, so
            // two are always at the gate until the last ones are let go.
            for _ in 0..<2 { #expect(await started.waitOffThread() == .success) }
            for _ in 2..<calls {
                gate.signal()
                #expect(await started.waitOffThread() == .success)
            }
            gate.signal()
            gate.signal()
            var done: [Int] = []
            for try await i in group { done.append(i) }
            #expect(done.sorted() == Array(0..<calls))
        }
        #expect(mostActive.withLock { $0 } == 2)
    }

    /// A call's error comes back as thrown, typed; its value as returned.
    @Test func aCallsResultAndTypedErrorComeBack() async {
        let pool = BlockingCallPool(width: 1, name: "sf-test-result")
        #expect(await pool.run { () throws(Never) -> Int in 41 + 1 } == 42)
        do throws(Refusal) {
            _ = try await pool.run { () throws(Refusal) -> Int in throw .refused(7) }
            Issue.record("no error")
        } catch {
            #expect(error == .refused(7))
        }
    }

    #if os(Linux)
    /// The threads are the pool's own (named after it) and end once the pool is released.
    @Test func thePoolsThreadsEndWithIt() async throws {
        let name = "sf-test-\(UInt16.random(in: 1000...9999))"
        func threads() -> Int {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            return tasks.filter { task in
                let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
                return comm.trimmingCharacters(in: .whitespacesAndNewlines) == name
            }.count
        }
        var pool: BlockingCallPool? = BlockingCallPool(width: 3, name: name)
        let executor = QueueExecutor(width: 2, label: "BlockingCallPoolTests")  // as above
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 {
                group.addTask(executorPreference: executor) { [pool] in
                    await pool!.run { () throws(Never) in
                        started.signal()
                        _ = gate.wait(timeout: .now() + 120)
                    }
                }
            }
            for _ in 0..<3 { #expect(await started.waitOffThread() == .success) }
            #expect(threads() == 3)
            for _ in 0..<3 { gate.signal() }
            try await group.waitForAll()
        }
        pool = nil
        // Each thread sees the pool stopped and exits: wait for that (an event), with a deadline.
        let deadline = Date().addingTimeInterval(60)
        while threads() > 0 && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(threads() == 0)
    }
    #endif
}

extension DispatchSemaphore {
    /// Waits (up to 120 s) on a thread of its own: a test's task never blocks one of Swift's few
    /// cooperative threads, which the tasks it waits for need.
    func waitOffThread() async -> DispatchTimeoutResult {
        (try? await TestSupport.onOwnThread { self.wait(timeout: .now() + 120) }) ?? .timedOut
    }
}
