import Foundation

/// File paths with their symbolic links, `.` and `..` resolved, so that two spellings of one file
/// compare equal (output policies, lock files, an output that must not be its input).
package enum FilePaths {
    /// The canonical path of an existing file or directory; nil when it does not exist.
    package static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `path` made canonical, or, for a file that does not exist yet, its directory made canonical
    /// and its name (or `path` standardized, when the directory does not exist either).
    package static func resolved(_ path: String) -> String {
        if let canonical = canonical(path) { return canonical }
        let url = URL(fileURLWithPath: path).standardizedFileURL
        guard let directory = canonical(url.deletingLastPathComponent().path) else { return url.path }
        return (directory == "/" ? "" : directory) + "/" + url.lastPathComponent
    }
}
