import SwiftASN1

/// Text for a DER parsing failure without swift-asn1's internals: its `ASN1Error` descriptions end
/// in a source file and line of the library (`ASN1Error.truncatedASN1Field:  SwiftASN1/ASN1.swift:202`),
/// which mean nothing to a user. This keeps the error code and reason only.
enum ASN1ErrorText {
    /// `error`'s description with any `ASN1Error.` prefix and trailing `File.swift:line` removed.
    static func clean(_ error: any Error) -> String {
        var words = String(describing: error).split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        if let last = words.last, last.contains(".swift:") { words.removeLast() }
        var text = words.joined(separator: " ")
        if text.hasPrefix("ASN1Error.") { text.removeFirst("ASN1Error.".count) }
        if text.hasSuffix(":") { text.removeLast() }
        return text.isEmpty ? "not valid DER" : text
    }
}
