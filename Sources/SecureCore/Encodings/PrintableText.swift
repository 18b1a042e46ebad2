/// Text from another party made safe to print on a terminal.
public enum PrintableText {
    /// `text` with C0 and C1 control characters, DEL, the line and paragraph separators and the
    /// bidirectional marks, overrides and isolates written as `\u{XX}` (and a backslash as `\\`,
    /// so that the text `\u{1B}` is told from an escaped ESC), so that it cannot move the cursor,
    /// clear a line, set a window title or the clipboard, or reorder what is shown (a forged "peer
    /// verified" line, say).
    public static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            if scalar == "\\" {
                result += "\\\\"
            } else if isUnsafe(scalar) {
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Whether `scalar` is one that `escaped` writes as `\u{XX}`: a C0 or C1 control character,
    /// DEL, a line or paragraph separator, or a bidirectional mark, override or isolate.
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
