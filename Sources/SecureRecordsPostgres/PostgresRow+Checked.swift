import PostgresNIO

/// A row whose shape does not match what was selected: the server (or something between) sent a
/// row of fewer or more columns than the statement selects.
struct MalformedRow: Error, CustomStringConvertible {
    let expected: Int, columns: Int
    var description: String { "a row of \(columns) values, where \(expected) were selected" }
}

extension PostgresRow {
    /// `decode(_:)` of a row first checked to have exactly as many columns as `type` has members.
    /// postgres-nio checks each data row against its row description, but not the description
    /// against what is decoded, and traps (a precondition) on a row shorter than the decoded tuple:
    /// a lying server or proxy would otherwise crash the client. (`count` is the data row's, which
    /// postgres-nio has made equal to the description's; no copy of the row is made.)
    func decodeChecked<each Column: PostgresDecodable>(_ type: (repeat each Column).Type) throws -> (repeat each Column) {
        var expected = 0
        for _ in repeat (each Column).self { expected += 1 }
        guard count == expected else { throw MalformedRow(expected: expected, columns: count) }
        return try decode(type)
    }
}
