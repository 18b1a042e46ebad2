import Dispatch
import Foundation

extension STREAM {
    /// Runs `body(i)` for every i in `0..<count`, spread over the available cores, and returns when
    /// all have finished.
    static func parallel(_ count: Int, _ body: @Sendable (Int) -> Void) {
        if count <= 1 {
            for i in 0..<count { body(i) }
        } else {
            DispatchQueue.concurrentPerform(iterations: count, execute: body)
        }
    }

    /// Runs `io` once and `body(i)` for every i in `0..<count`, all in one fork-join over the cores,
    /// and returns when all have finished; then rethrows what `io` threw. The pipelines pass their
    /// reading and writing as `io`, so it takes a core's turn like any chunk: no third thread
    /// competes with two sealing ones, and no hand-off to a background thread sits between batches.
    /// `io` may run on another thread than the caller's, while the caller is blocked here.
    static func parallel(_ count: Int, alongside io: () throws -> Void, _ body: @Sendable (Int) -> Void) throws {
        try withoutActuallyEscaping(io) { io in
            let task = SingleRun(io)
            DispatchQueue.concurrentPerform(iterations: count + 1) { i in
                if i == 0 { task.run() } else { body(i - 1) }
            }
            try task.result.get()
        }
    }
}

/// A closure run once by one iteration of a fork-join, and its outcome. Unchecked Sendable: exactly
/// one iteration calls `run`, and the owner reads `result` only after the join, which orders the
/// two; the caller that owns whatever the closure touches is blocked in the join meanwhile.
private final class SingleRun: @unchecked Sendable {
    private let body: () throws -> Void
    private(set) var result: Result<Void, any Error> = .success(())

    init(_ body: @escaping () throws -> Void) {
        self.body = body
    }

    func run() {
        result = Result { try body() }
    }
}

/// Per-iteration results of `STREAM.parallel`. Unchecked Sendable: iteration i alone writes element
/// i, and the owner reads only after `parallel` returned (which orders those writes before the reads).
final class ResultSlots<Element>: @unchecked Sendable {
    private let base: UnsafeMutablePointer<Element>
    let count: Int

    init(count: Int, initialValue: Element) {
        self.count = count
        base = .allocate(capacity: max(count, 1))
        base.initialize(repeating: initialValue, count: count)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    subscript(i: Int) -> Element {
        get { base[i] }
        set { base[i] = newValue }
    }
}

extension ResultSlots {
    /// The values in order, or the first error.
    func values<Value>() throws -> [Value] where Element == Result<Value, any Error> {
        try (0..<count).map { try self[$0].get() }
    }
}

/// A fixed set of aligned slots, reused for every batch so memory stays bounded. A buffer that
/// holds plaintext is wiped when released, up to the furthest byte written (`noteWritten`), so a
/// small stream does not pay for touching a whole batch. Unchecked Sendable: while the cores work on
/// a buffer, each iteration touches only its own slot, and the owner touches the buffer only after
/// the work finished.
final class SlotBuffer: @unchecked Sendable {
    let slotSize: Int
    let count: Int
    private let storage: UnsafeMutableRawBufferPointer
    private let holdsPlaintext: Bool
    private var written = 0

    init(slots: Int, slotSize: Int, holdsPlaintext: Bool) {
        self.slotSize = slotSize
        self.count = slots
        self.holdsPlaintext = holdsPlaintext
        storage = .allocate(byteCount: slots * slotSize, alignment: 64)
    }

    deinit {
        if holdsPlaintext { memset(storage.baseAddress!, 0, written) }
        storage.deallocate()
    }

    /// Records that bytes up to offset `end` were written, so the wipe covers them.
    func noteWritten(upTo end: Int) {
        written = max(written, min(end, storage.count))
    }

    /// Slot `i`.
    func slot(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: storage[i * slotSize..<(i + 1) * slotSize])
    }

    /// All the slots as one region.
    var all: UnsafeMutableRawBufferPointer { storage }
}
