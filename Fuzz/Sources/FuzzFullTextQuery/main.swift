import Foundation
import FuzzSupport
import SecureCore
import SecureRecords
import SecureRecordsPostgres

// Full-text queries as a user (or a program passing user input) writes them, on both backends'
// paths: the SQLite store runs the query through FTS5 over a multilingual corpus, and the
// PostgreSQL translator turns it into a tsquery (the server is not needed for that); the text is
// also tokenized as PostgreSQL indexes it. Input: the query (UTF-8, invalid sequences replaced).
// Checked beyond "no crash": a query over the shared limits is refused by both, as invalidQuery.

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
    do throws(RecordsError) {
        _ = try store.search(in: "c", [.fullText(query)])
        precondition(!overLimits, "SQLite ran a query over the limits")
    } catch {
        precondition(!overLimits || isInvalidQuery(error), "SQLite refused a query over the limits with \(error)")
    }
    do throws(RecordsError) {
        _ = try PostgresFullText.tsquery(query)
        precondition(!overLimits, "the PostgreSQL translator accepted a query over the limits")
    } catch {
        precondition(!overLimits || isInvalidQuery(error), "the PostgreSQL translator refused a query over the limits with \(error)")
    }
    _ = PostgresFullText.tsvector(query)
}
