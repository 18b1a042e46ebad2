#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import SecureFoundation
import Synchronization

/// The progress bar of the commands that stream large files (`sf encrypt`/`decrypt`,
/// `sf seal --stream`, `sf open`): `[#####                    ]  20%` on standard error, drawn only
/// when standard error is a terminal and the input is a regular file over 64 MiB, never in pipes.
final class ProgressBar: Sendable {
    /// Inputs up to this size finish too quickly for a bar to help.
    static let minimumSize = 64 << 20

    /// The size of the input at `path` when it should get a bar: standard error is a terminal and
    /// `path` names a regular file over `minimumSize` (not standard input); nil otherwise.
    static func total(forInput path: String?, minimumSize: Int = minimumSize) -> Int? {
        guard let path, path != "-", isatty(2) == 1 else { return nil }
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size > minimumSize else { return nil }
        return Int(status.st_size)
    }

    private let total: Int
    /// The percentage on screen (-1 before the first draw). The lock is held while drawing, so
    /// two draws never interleave.
    private let shownPercent = Mutex(-1)

    /// A bar for `total` bytes; nothing is drawn until the first `update`.
    init(total: Int) { self.total = max(total, 1) }

    /// Redraws the bar when `done` bytes out of the total change the whole percentage.
    func update(done: Int) {
        let percent = min(100, max(0, done) * 100 / total)
        shownPercent.withLock { shown in
            guard percent != shown else { return }
            shown = percent
            let bar = String(repeating: "#", count: percent / 4) + String(repeating: " ", count: 25 - percent / 4)
            Terminal.writeToStandardError("\r[\(bar)] \(percent)%")
        }
    }

    /// Redraws the bar for `fraction` (0 to 1) of the work done.
    func update(fraction: Double) { update(done: Int(min(1, max(0, fraction)) * Double(total))) }

    /// Erases the bar, so what follows on standard error (an error message, say) starts a clean line.
    func clear() {
        shownPercent.withLock { shown in
            if shown >= 0 { Terminal.writeToStandardError("\r\u{1b}[K") }
            shown = -1
        }
    }

    /// Runs `body` with a bar for the input at `path` (see `total(forInput:)`) that follows the read
    /// position of `descriptor`, sampled five times a second. For readers that take a plain
    /// descriptor (SecureCore's `FileInput`) and so cannot report their reads themselves.
    static func following<R>(descriptor: Int32, input path: String?, _ body: () throws -> R) rethrows -> R {
        guard let total = total(forInput: path) else { return try body() }
        let bar = ProgressBar(total: total)
        bar.update(done: 0)
        let stop = DispatchSemaphore(value: 0)
        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while stop.wait(timeout: .now() + .milliseconds(200)) == .timedOut {
                let position = lseek(descriptor, 0, SEEK_CUR)
                if position >= 0 { bar.update(done: Int(position)) }
            }
            stopped.signal()
        }
        defer {
            stop.signal()
            stopped.wait()
            bar.clear()
        }
        return try body()
    }
}

/// An age byte source that draws a `ProgressBar` as its bytes are read.
final class ProgressSource: Age.ByteSource {
    private let base: Age.ByteSource
    private let bar: ProgressBar
    private var done = 0

    init(_ base: Age.ByteSource, total: Int) {
        self.base = base
        self.bar = ProgressBar(total: total)
    }

    deinit { bar.clear() }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = try base.read(into: buffer)
        done += n
        bar.update(done: done)
        return n
    }
}
