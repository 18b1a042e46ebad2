#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif
#if canImport(CLinuxExtras)
import CLinuxExtras
#endif
import ArgumentParser
import Foundation
import SecureFoundation

/// What `sf encrypt`, `sf decrypt` and `sf keygen` share: input and output selection, error
/// reporting with age's exit statuses, and the progress bar.
enum AgeCommandSupport {
    /// Runs `body` after tuning the allocator; errors reach `sf`'s main, which prints them and
    /// exits 1 (operation failed) or 2 (`ValidationError`, usage).
    static func run(_ body: () throws -> Void) throws {
        keepFreedMemory()
        try body()
    }

    /// swift-crypto returns every sealed or opened 64 KiB chunk in a fresh allocation (age and SFS1
    /// streams alike: `sf seal --stream` and `sf open` call this too). By default
    /// glibc hands freed memory back to the kernel and faults it in again on the next chunk, which
    /// costs about 15% of the CPU time; keeping up to 64 MiB of freed memory avoids that churn.
    static func keepFreedMemory() {
        #if canImport(CLinuxExtras)
        _ = mallopt(M_MMAP_THRESHOLD, 4 << 20)
        _ = mallopt(M_TRIM_THRESHOLD, 64 << 20)
        #endif
    }

    /// The input file, or standard input for nil or `-`; wrapped in a progress bar when stderr is
    /// a terminal and the input is a regular file over 64 MiB (`ProgressBar`).
    static func input(_ path: String?) throws -> Age.ByteSource {
        guard let path, path != "-" else {
            try Terminal.takeStandardInput(for: "the input")
            return Age.DescriptorSource(descriptor: 0, name: "standard input")
        }
        let source = try Age.DescriptorSource(path: path)
        if let total = ProgressBar.total(forInput: path) { return ProgressSource(source, total: total) }
        return source
    }

    /// Writes to `path` under the library's output policy (`OutputDestination`: a regular file
    /// atomically, complete or absent; a device or pipe in place, never replacing, say,
    /// /dev/null), or streams to standard output.
    static func withOutput(_ path: String?, binary: Bool, _ body: (Age.ByteSink) throws -> Void) throws {
        if let path, path != "-" {
            try OutputDestination.write(to: path) { output in
                try body(Age.DescriptorSink(descriptor: output.descriptor, name: path))
            }
        } else {
            if binary, isatty(1) == 1 {
                throw CLIError("refusing to write binary age data to a terminal; use -a for armor or -o FILE")
            }
            try body(Age.DescriptorSink(descriptor: 1, name: "standard output"))
        }
    }

    /// Prints `sf: warning: <message>` on standard error (never secrets).
    static func warn(_ message: String) {
        Terminal.writeError("sf: warning: \(message)")
    }

    /// The text of a recipients or identity file (standard input for `-`), at most
    /// `Terminal.maximumAgeKeyFile` bytes, or a clear error.
    static func readText(_ path: String) throws -> String {
        let input = path == "-" ? try Terminal.standardInput(for: "a recipients or identity file") : try FileInput(path: path)
        let data = try Terminal.readKeyFile(input, kind: "a recipients or identity file", limit: Terminal.maximumAgeKeyFile)
        return String(decoding: data, as: UTF8.self)
    }
}
