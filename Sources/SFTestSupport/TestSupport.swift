import Foundation

/// Helpers shared by the test targets: locating the published test vectors, the package root and
/// the built `sf` binary, reading Wycheproof files, and running peer processes. Not a product.
public enum TestSupport {
    /// True when running under CI (`CI=true`), where a missing peer or missing vectors is a failure.
    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// The package root (the folder holding Package.swift).
    public static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        fatalError("Package.swift not found above \(#filePath)")
    }()

    /// The vectors folder: `$SF_TEST_VECTORS` when set, else `Tests/Vectors` inside the package
    /// (the copy every clone has; see Tests/Vectors/README.md). Nil (with the reason in
    /// `vectorsMissingReason`) when that folder does not exist.
    public static let vectorsDirectory: URL? = {
        if let env = ProcessInfo.processInfo.environment["SF_TEST_VECTORS"], !env.isEmpty {
            return FileManager.default.fileExists(atPath: env) ? URL(fileURLWithPath: env) : nil
        }
        let url = packageRoot.appendingPathComponent("Tests/Vectors")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }()

    /// Why `vectorsDirectory` is nil, for skip and failure messages.
    public static let vectorsMissingReason =
        "test vectors not found: Tests/Vectors is missing from the package, or SF_TEST_VECTORS names a missing folder"

    /// The contents of a vector file under the vectors folder, or nil when the folder is absent.
    public static func vector(_ relativePath: String) throws -> Data? {
        guard let dir = vectorsDirectory else { return nil }
        return try Data(contentsOf: dir.appendingPathComponent(relativePath))
    }

    /// The first of `names` found on PATH.
    public static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// The `sf` binary built alongside the tests (same build folder as the test bundle).
    public static var sfBinary: URL? { builtExecutable("sf") }

    /// The executable `name` of this package built beside the test bundle (`swift build
    /// --build-tests` builds them all), or in `.build/debug`; nil when it was not built.
    public static func builtExecutable(_ name: String) -> URL? {
        let bundle = Bundle.main.bundleURL
        for dir in [bundle, bundle.deletingLastPathComponent(), packageRoot.appendingPathComponent(".build/debug")] {
            let candidate = dir.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    /// A fresh temporary directory, removed by the caller with `FileManager.removeItem`.
    public static func temporaryDirectory(_ prefix: String = "sf-test") throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// The result of a finished child process.
public struct ProcessResult: Sendable {
    public let status: Int32
    public let stdout: Data
    public let stderr: Data
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

extension TestSupport {
    /// Runs `executable` with `arguments`, feeding `stdin`, and waits for it.
    @discardableResult
    public static func run(
        _ executable: String, _ arguments: [String], stdin: Data = Data(), environment: [String: String]? = nil,
        currentDirectory: URL? = nil
    ) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : (which(executable) ?? executable))
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let input = Pipe(), output = Pipe(), error = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        try process.run()
        // Drain both pipes concurrently so a chatty child never blocks on a full pipe.
        let outBox = DataBox(), errBox = DataBox()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { outBox.data = output.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { errBox.data = error.fileHandleForReading.readDataToEndOfFile() }
        // A child may exit before reading all its input (for example on a header error); the write
        // must then fail with EPIPE instead of killing the test process with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        if !stdin.isEmpty { try? input.fileHandleForWriting.write(contentsOf: stdin) }
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        group.wait()
        return ProcessResult(status: process.terminationStatus, stdout: outBox.data, stderr: errBox.data)
    }

    /// One pipe's bytes. Unchecked Sendable: its reader alone writes it, and the test reads it only
    /// after `group.wait()`, which orders the two.
    private final class DataBox: @unchecked Sendable {
        var data = Data()
    }
}

/// A Wycheproof test file (`testGroups[].tests[]`), decoded loosely: group and test fields are kept
/// as JSON values so every primitive's file fits one type.
public struct WycheproofFile: Decodable, Sendable {
    public let algorithm: String?
    public let testGroups: [Group]

    public struct Group: Decodable, Sendable {
        public let fields: [String: JSONValue]
        public let tests: [Test]

        public init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: AnyKey.self)
            var fields = [String: JSONValue]()
            var tests = [Test]()
            for key in container.allKeys {
                if key.stringValue == "tests" {
                    tests = try container.decode([Test].self, forKey: key)
                } else {
                    fields[key.stringValue] = try container.decode(JSONValue.self, forKey: key)
                }
            }
            self.fields = fields
            self.tests = tests
        }

        /// A string field of the group (for example `keySize`, `sha`, `publicKeyPem`).
        public subscript(_ name: String) -> JSONValue? { fields[name] }
    }

    public struct Test: Decodable, Sendable {
        public let tcId: Int
        public let result: String
        public let flags: [String]
        public let fields: [String: JSONValue]

        public init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: AnyKey.self)
            var fields = [String: JSONValue]()
            for key in container.allKeys { fields[key.stringValue] = try container.decode(JSONValue.self, forKey: key) }
            self.fields = fields
            tcId = fields["tcId"]?.int ?? -1
            result = fields["result"]?.string ?? ""
            flags = fields["flags"]?.array?.compactMap(\.string) ?? []
        }

        /// A field holding hex, decoded.
        public func hex(_ name: String) -> Data {
            Data(hexString: fields[name]?.string ?? "")
        }

        public subscript(_ name: String) -> JSONValue? { fields[name] }
        public var isValid: Bool { result == "valid" }
        public var isInvalid: Bool { result == "invalid" }
    }

    /// Loads `wycheproof/<name>` from the vectors folder; nil when vectors are absent.
    public static func load(_ name: String) throws -> WycheproofFile? {
        guard let data = try TestSupport.vector("wycheproof/\(name)") else { return nil }
        return try JSONDecoder().decode(WycheproofFile.self, from: data)
    }

    /// Loads `wycheproof/<name>`, throwing `VectorsMissing` when the vectors folder is absent. For
    /// tests marked `.enabled(if: TestSupport.vectorsAvailable)`, where absence is a failure.
    public static func required(_ name: String) throws -> WycheproofFile {
        guard let file = try load(name) else { throw VectorsMissing(file: "wycheproof/\(name)") }
        return file
    }
}

/// Thrown when a test that needs the published vectors runs without them (under CI).
public struct VectorsMissing: Error, CustomStringConvertible, Sendable {
    /// The vector file that was needed, relative to the vectors folder.
    public let file: String

    /// The file and `TestSupport.vectorsMissingReason`.
    public var description: String { "\(file): \(TestSupport.vectorsMissingReason)" }
}

/// A JSON value, for loosely typed vector files.
public enum JSONValue: Decodable, Sendable, Equatable {
    case string(String), number(Double), bool(Bool), array([JSONValue]), object([String: JSONValue]), null

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let v = try? c.decode(Bool.self) { self = .bool(v) }
        else if let v = try? c.decode(Double.self) { self = .number(v) }
        else if let v = try? c.decode(String.self) { self = .string(v) }
        else if let v = try? c.decode([JSONValue].self) { self = .array(v) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var int: Int? { if case .number(let n) = self { Int(n) } else { nil } }
    public var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    public var object: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Data {
    /// Decodes hex; traps on malformed input (test vectors are trusted data).
    public init(hexString: String) {
        var bytes = [UInt8]()
        bytes.reserveCapacity(hexString.utf8.count / 2)
        var iterator = hexString.utf8.makeIterator()
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: fatalError("bad hex in test vector")
            }
        }
        while let hi = iterator.next(), let lo = iterator.next() { bytes.append(nibble(hi) << 4 | nibble(lo)) }
        self.init(bytes)
    }
}
