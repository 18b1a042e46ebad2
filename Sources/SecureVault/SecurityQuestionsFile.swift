import Foundation
import SecureCore

/// Security questions, or their answers, kept in a text file: one per line, in order. Blank lines
/// (empty or whitespace only) are skipped and any line ending (LF, CRLF, CR) ends a line, so a file
/// written on any system, with or without a final newline, gives the same list. Answers in the
/// list are later normalized by `SecurityAnswers`.
public enum SecurityQuestionsFile {
    /// The largest file read (1 MiB): questions and answers are short lines.
    public static let maximumSize = 1 << 20

    /// The non-blank lines of `text`, in order.
    public static func lines(in text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).map(String.init).filter { !$0.allSatisfy(\.isWhitespace) }
    }

    /// The non-blank lines of the UTF-8 file at `path`.
    /// Throws `SecureCoreError.io` when it cannot be read, `invalidParameter` when it is over
    /// `maximumSize`.
    public static func read(path: String) throws(SecureCoreError) -> [String] {
        let input = try FileInput(path: path)
        let data = try input.read(upTo: maximumSize + 1)
        guard data.count <= maximumSize else {
            throw .invalidParameter("\(path) is over \(maximumSize >> 20) MiB: not a file of security questions or answers")
        }
        return lines(in: String(decoding: data, as: UTF8.self))
    }
}
