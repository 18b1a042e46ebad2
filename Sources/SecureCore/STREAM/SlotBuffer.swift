import Foundation

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
