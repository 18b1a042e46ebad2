import Foundation
import FuzzSupport
import SecureCore
import SecureRecords
import SecureRecordsPostgres

// Full-text queries as a user (or a program passing user input) writes them, on both backends'
// paths: the query is parsed once (`FullTextQuery`), the SQLite store runs it through FTS5 over a
// multilingual corpus, and the PostgreSQL translator turns it into a tsquery (the server is not
// needed for that); the input is also indexed as both backends index text. Input: the query
// (UTF-8, invalid sequences replaced). Checked beyond "no crash": SQLite runs every query the
// parser accepts (FTS5 never refuses what we generate) and refuses the others with the parser's
// own error; a query over the shared limits is refused, as invalidQuery.

let corpus = [
    "Ann Noël café", "Việt Nam", "ά αβγ Σίσυφος", "Москва ёлка", "東京 タワー", "مرحبا بالعالم",
    "e\u{301}te\u{301} combining", "🎁 gift", "Ⓐⓑⓒ enclosed", "ẛ̣ long s", "bicycle red-bike", "ssn 123-45",
]
let directory = Fuzz.scratchDirectory("full-text")
let store: RecordStore = {
    let store = try! RecordStore(path: directory + "/query.sfr")
    try! store.createCollection("c", schema: RecordSchema(["text": .clear, "more": .clear]))
    for (index, text) in corpus.enumerated() {
        _ = try! store.add(["text": .string(text), "more": .string(corpus[(index + 5) % corpus.count])], to: "c")
    }
    return store
}()

func isInvalidQuery(_ error: RecordsError) -> Bool {
    if case .invalidQuery = error { true } else { false }
}

Fuzz.main(seeds: {
    ["bicycle", "\"red bike\"", "bi*", "a AND b", "noel OR (viet NOT nam)", "text: cafe", "NEAR(a b, 2)", "((((x))))",
     "\"unterminated", "ά*", "🎁", "-x", "a + b", "^start", "{text more}: ann"].map { Data($0.utf8) }
}) { input in
    let query = String(decoding: input, as: UTF8.self)
    let overLimits: Bool
    do { try FullTextQueryLimits.check(query); overLimits = false } catch { overLimits = true }
    let parsed = Result(catching: { () throws(RecordsError) in try FullTextQuery(query) })
    if case .failure(let error) = parsed { precondition(isInvalidQuery(error), "the parser refused with \(error)") }
    precondition(!overLimits || (try? parsed.get()) == nil, "the parser accepted a query over the limits")
    do throws(RecordsError) {
        _ = try store.search(in: "c", [.fullText(query)])
        precondition((try? parsed.get()) != nil, "SQLite ran a query the parser refused")
    } catch {
        guard case .failure(let parseError) = parsed else { preconditionFailure("SQLite refused a parsed query: \(error)") }
        precondition(error == parseError, "SQLite refused with \(error), the parser with \(parseError)")
    }
    do throws(RecordsError) {
        _ = try PostgresFullText.tsquery(query)
        precondition((try? parsed.get()) != nil, "the PostgreSQL translator accepted a query the parser refused")
    } catch {
        precondition((try? parsed.get()) == nil, "the PostgreSQL translator refused a parsed query with \(error)")
    }
    _ = PostgresFullText.tsvector(query)
}
