import Ledger
import Postgres

/// The row count of every ledger table (users, grants and the append-only ones), to prove that a
/// refused request or call wrote nothing: compare before and after.
public func ledgerRowCounts(_ client: PostgresClient) async throws -> [String: Int] {
    var counts: [String: Int] = [:]
    // The views too: a purchase's own journal entry, postings and grant event are derived rows.
    for table in ["users", "grants"] + LedgerInvariants.appendOnlyTables + [
        "journal_entries", "postings", "grant_events",
    ] {
        counts[table] = try await client.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)")).single()
            .decode(Int.self, at: 0)
    }
    return counts
}
