import PostgresNIO

/// A row whose shape does not match what was selected: the server (or something between) sent a
/// row description or a data row with fewer columns than the statement selects.
struct MalformedRow: Error, CustomStringConvertible {
    let expected: Int, described: Int, cells: Int
    var description: String { "a row of \(cells) values under \(described) columns, where \(expected) were selected" }
}

extension PostgresRow {
    /// `decode(_:)` of a row first checked to have exactly as many columns, in its description
    /// and in its data, as `type` has members: postgres-nio checks neither against the other, and
    /// traps (a precondition, or an unchecked unwrap) on a row shorter than the decoded tuple, so a
    /// lying server or proxy would otherwise crash the client.
    func decodeChecked<each Column: PostgresDecodable>(_ type: (repeat each Column).Type) throws -> (repeat each Column) {
        var expected = 0
        for _ in repeat (each Column).self { expected += 1 }
        let described = makeRandomAccess().count
        guard described == expected, count == expected else { throw MalformedRow(expected: expected, described: described, cells: count) }
        return try decode(type)
    }
}
