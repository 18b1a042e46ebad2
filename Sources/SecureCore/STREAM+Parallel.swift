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

/// A fixed set of aligned slots, reused for every batch so memory stays bounded, and wiped when
/// released (plaintext passes through them). Unchecked Sendable: while the cores work on a buffer,
/// each iteration touches only its own slot, and the owner touches the buffer only after the work
/// finished.
final class SlotBuffer: @unchecked Sendable {
    let slotSize: Int
    let count: Int
    private let storage: UnsafeMutableRawBufferPointer

    init(slots: Int, slotSize: Int) {
        self.slotSize = slotSize
        self.count = slots
        storage = .allocate(byteCount: slots * slotSize, alignment: 64)
    }

    deinit {
        memset(storage.baseAddress!, 0, storage.count)
        storage.deallocate()
    }

    /// Slot `i`.
    func slot(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: storage[i * slotSize..<(i + 1) * slotSize])
    }

    /// All the slots as one region.
    var all: UnsafeMutableRawBufferPointer { storage }
}

/// Work started on a background thread (which spreads it over the cores) while the calling thread
/// does I/O; `wait()` returns its result. Unchecked Sendable: the result is written once by the
/// background thread before it signals, and read only after `wait()` saw the signal.
final class BackgroundJob<Value>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Value?

    /// Starts `work` at once.
    init(_ work: @escaping @Sendable () -> Value) {
        DispatchQueue.global(qos: .userInitiated).async {
            self.result = work()
            self.done.signal()
        }
    }

    /// Waits for the work to finish and returns its result. Call once.
    func wait() -> Value {
        done.wait()
        return result!
    }
}

extension STREAM {
    /// Reads until `buffer` is full or `read` returns 0 (the end of input); returns the count, less
    /// than the buffer's size only at the end of input.
    static func readFully(
        into buffer: UnsafeMutableRawBufferPointer, _ read: (UnsafeMutableRawBufferPointer) throws -> Int
    ) throws -> Int {
        var total = 0
        while total < buffer.count {
            let n = try read(UnsafeMutableRawBufferPointer(rebasing: buffer[total...]))
            if n == 0 { break }
            total += n
        }
        return total
    }
}
