import Dispatch
import Foundation

/// The one parallel map of the package: a fork-join over the cores (`concurrentPerform`), in which
/// the calling thread takes part. STREAM seals and opens its chunks with it, and SecureRecords seals
/// its bulk adds with it; both pass their I/O (reading, writing, inserting the previous batch) as
/// `alongside`, so the I/O takes one core's turn like any item instead of a third thread competing
/// with the workers, and no hand-off to a background thread sits between batches.
package enum ForkJoin {
    /// Runs `body(i)` for every i in `0..<count`, spread over the available cores, and returns when
    /// all have finished.
    package static func run(_ count: Int, _ body: @Sendable (Int) -> Void) {
        if count <= 1 {
            for i in 0..<count { body(i) }
        } else {
            DispatchQueue.concurrentPerform(iterations: count, execute: body)
        }
    }

    /// Runs `io` once and `body(i)` for every i in `0..<count`, all in one fork-join over the cores,
    /// and returns when all have finished; then rethrows what `io` threw. `io` may run on another
    /// thread than the caller's, while the caller is blocked here (so `io` may touch what the
    /// caller owns, as the caller would).
    package static func run<Failure: Error>(
        _ count: Int, alongside io: () throws(Failure) -> Void, _ body: @Sendable (Int) -> Void
    ) throws(Failure) {
        let result = withoutActuallyEscaping(io) { io in
            let task = SingleRun(io)
            DispatchQueue.concurrentPerform(iterations: count + 1) { i in
                if i == 0 { task.run() } else { body(i - 1) }
            }
            return task.result
        }
        try result.get()
    }
}

/// A closure run once by one iteration of a fork-join, and its outcome. Unchecked Sendable: exactly
/// one iteration calls `run`, and the owner reads `result` only after the join, which orders the
/// two; the caller that owns whatever the closure touches is blocked in the join meanwhile.
private final class SingleRun<Failure: Error>: @unchecked Sendable {
    private let body: () throws(Failure) -> Void
    private(set) var result: Result<Void, Failure> = .success(())

    init(_ body: @escaping () throws(Failure) -> Void) {
        self.body = body
    }

    func run() {
        result = Result { () throws(Failure) in try body() }
    }
}

/// Per-iteration results of a `ForkJoin` run. Unchecked Sendable: iteration i alone writes element
/// i, and the owner reads only after `run` returned (which orders those writes before the reads).
package final class ResultSlots<Element>: @unchecked Sendable {
    private let base: UnsafeMutablePointer<Element>
    /// The number of slots.
    package let count: Int

    /// `count` slots, each holding `initialValue`.
    package init(count: Int, initialValue: Element) {
        self.count = count
        base = .allocate(capacity: max(count, 1))
        base.initialize(repeating: initialValue, count: count)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    /// Slot `i`.
    package subscript(i: Int) -> Element {
        get { base[i] }
        set { base[i] = newValue }
    }
}

extension ResultSlots {
    /// The values in order, or the first error.
    package func values<Value>() throws -> [Value] where Element == Result<Value, any Error> {
        try (0..<count).map { try self[$0].get() }
    }
}
