import Foundation

/// A fresh temporary directory for one test, with helpers for its files; removed when released.
/// Unchecked Sendable: an open class (the test targets subclass it) cannot be checked; its one
/// stored property is a constant.
open class ScratchDirectory: @unchecked Sendable {
    /// The directory.
    public let url: URL

    /// Creates `<tmp>/<prefix>-<UUID>`.
    public init(_ prefix: String = "sf-test") throws { url = try TestSupport.temporaryDirectory(prefix) }
    deinit { try? FileManager.default.removeItem(at: url) }

    /// The path of `name` inside the directory.
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Writes `data` to `name` and returns its path.
    @discardableResult
    public func write(_ name: String, _ data: Data) throws -> String {
        try data.write(to: URL(fileURLWithPath: path(name)))
        return path(name)
    }

    /// Writes `text` (UTF-8) to `name` and returns its path.
    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String { try write(name, Data(text.utf8)) }

    /// The contents of `name`.
    public func read(_ name: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path(name))) }
}
