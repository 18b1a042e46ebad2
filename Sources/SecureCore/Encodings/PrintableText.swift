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
            switch scalar.value {
            case 0x5C:
                result += "\\\\"
            case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069:
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
