import CFuzzerDriver
import Foundation

/// The driver shared by every fuzz target: runs libFuzzer on `body`, or writes seed inputs.
public enum Fuzz {
    nonisolated(unsafe) private static var body: ((Data) -> Void)?

    /// Runs libFuzzer with the process arguments, calling `body` once per input. When the environment
    /// variable `FUZZ_WRITE_SEEDS` names a directory, writes `seeds()` there instead (seed-N files) and
    /// exits: seeds that need this target's fixed keys are made by the library itself.
    public static func main(seeds: () throws -> [Data] = { [] }, _ body: @escaping (Data) -> Void) -> Never {
        if let directory = ProcessInfo.processInfo.environment["FUZZ_WRITE_SEEDS"] {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                for (index, seed) in try seeds().enumerated() {
                    try seed.write(to: URL(fileURLWithPath: directory).appendingPathComponent("gen-\(index)"))
                }
                exit(0)
            } catch {
                FileHandle.standardError.write(Data("seed generation failed: \(error)\n".utf8))
                exit(1)
            }
        }
        Self.body = body
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in Fuzz.run(data, size) })
    }

    /// Calls the target's body on one input.
    static func run(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        guard let body else { fatalError("Fuzz.main was not called: libFuzzer's own main ran instead") }
        body(size == 0 ? Data() : Data(bytes: data!, count: size))
        return 0
    }

    /// A fresh directory under the temporary directory, for targets that need files.
    public static func scratchDirectory(_ name: String) -> String {
        let path = NSTemporaryDirectory() + "/sf-fuzz-\(name)-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// libFuzzer's callback symbol. The targets run libFuzzer through `LLVMFuzzerRunDriver` from their own
/// main, but -sanitize=fuzzer also links libFuzzer's main object, which references this symbol.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    Fuzz.run(data, size)
}
