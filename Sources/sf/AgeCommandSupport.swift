#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif
#if canImport(CMalloc)
import CMalloc
#endif
import ArgumentParser
import Foundation
import SecureFoundation

/// What `sf encrypt`, `sf decrypt` and `sf keygen` share: input and output selection, error
/// reporting with age's exit statuses, and the progress bar.
enum AgeCommandSupport {
    /// Runs `body`, turning library and I/O failures into a message on stderr and exit status 1.
    static func run(_ body: () throws -> Void) throws {
        keepFreedMemory()
        do {
            try body()
        } catch let error as AgeError {
            fail(error.description)
        } catch let error as PassphraseReader.Failure {
            fail(error.description)
        } catch let error as SecureCoreError {
            fail(error.description)
        }
    }

    /// swift-crypto returns every sealed or opened 64 KiB chunk in a fresh allocation. By default
    /// glibc hands freed memory back to the kernel and faults it in again on the next chunk, which
    /// costs about 15% of the CPU time; keeping up to 64 MiB of freed memory avoids that churn.
    static func keepFreedMemory() {
        #if canImport(CMalloc)
        _ = mallopt(M_MMAP_THRESHOLD, 4 << 20)
        _ = mallopt(M_TRIM_THRESHOLD, 64 << 20)
        #endif
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("sf: error: \(message)\n".utf8))
        exit(1)
    }

    static func usage(_ message: String) -> Never {
        FileHandle.standardError.write(Data("sf: usage error: \(message)\n".utf8))
        exit(2)
    }

    /// The input file, or standard input for nil or `-`; wrapped in a progress bar when stderr is
    /// a terminal and the input is a regular file over 64 MiB.
    static func input(_ path: String?) throws -> Age.ByteSource {
        guard let path, path != "-" else { return Age.DescriptorSource(descriptor: 0, name: "standard input") }
        let source = try Age.DescriptorSource(path: path)
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        if isatty(2) == 1, size > 64 << 20 { return ProgressSource(source, total: size) }
        return source
    }

    /// Writes to `path` atomically (complete or absent), or streams to standard output.
    static func withOutput(_ path: String?, binary: Bool, _ body: (Age.ByteSink) throws -> Void) throws {
        if let path, path != "-" {
            try AtomicFile.write(to: path) { output in
                try body(Age.DescriptorSink(descriptor: output.descriptor, name: path))
            }
        } else {
            if binary, isatty(1) == 1 {
                fail("refusing to write binary age data to a terminal; use -a for armor or -o FILE")
            }
            try body(Age.DescriptorSink(descriptor: 1, name: "standard output"))
        }
    }

    /// The text of a key file, or a clear error.
    static func readText(_ path: String) throws -> String {
        if path == "-" {
            return String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        }
        guard let data = FileManager.default.contents(atPath: path) else { fail("cannot read \(path)") }
        return String(decoding: data, as: UTF8.self)
    }
}

/// Reports progress on stderr while bytes are read: `[#####     ]  48%`.
final class ProgressSource: Age.ByteSource {
    private let base: Age.ByteSource
    private let total: Int
    private var done = 0
    private var shownPercent = -1

    init(_ base: Age.ByteSource, total: Int) {
        self.base = base
        self.total = total
    }

    deinit { FileHandle.standardError.write(Data("\r\u{1b}[K".utf8)) }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = try base.read(into: buffer)
        done += n
        let percent = min(100, done * 100 / max(total, 1))
        if percent != shownPercent {
            shownPercent = percent
            let bar = String(repeating: "#", count: percent / 4) + String(repeating: " ", count: 25 - percent / 4)
            FileHandle.standardError.write(Data("\r[\(bar)] \(percent)%".utf8))
        }
        return n
    }
}
