import Ledger
import Postgres

extension PostgresQuery.StringInterpolation {
    /// A subquery of the instants (column `at`) whose local day's cached report figures (migration
    /// 0013) the entries recorded since `since` can change; the catch-up's `reportDays` invalidation
    /// deletes those days, readers compute them. Each entry changes its own day: its kind, item and
    /// price are counted there. A later entry never changes an earlier one's figures (a learned price
    /// or refund state counts for entries after it, by `seq`), so no other entry's day. A priced, self-bought purchase also
    /// changes whether its user's next such purchase in the book is the first: a cached day counted
    /// a first purchase that some purchase recorded since may precede, and the purchase just before
    /// it in time is one of those recorded since, so "the next after each" reaches every such day.
    /// Read by `journal_entry_rows_by_recorded_at`, `purchases_by_recorded_at` and one probe per
    /// recent purchase on `purchases_by_user`: the cost follows what was recorded since.
    mutating func appendInterpolation(instantsTouchedSince since: String) {
        appendLiteral("(SELECT j.effective_at AS at FROM journal_entry_rows j WHERE j.recorded_at >= ")
        appendInterpolation(since)
        appendLiteral("::timestamptz UNION ALL SELECT p.purchased_at FROM purchases p WHERE p.recorded_at >= ")
        appendInterpolation(since)
        appendLiteral(
            """
            ::timestamptz UNION ALL
            SELECT n.purchased_at FROM purchases p
            CROSS JOIN LATERAL (
                SELECT q.purchased_at FROM purchases q
                WHERE q.uid = p.uid AND q.book = p.book AND q.purchased_at > p.purchased_at
                  AND q.ownership = 'PURCHASED' AND q.currency IS NOT NULL
                ORDER BY q.purchased_at LIMIT 1
            ) n
            WHERE p.ownership = 'PURCHASED' AND p.currency IS NOT NULL AND p.recorded_at >= 
            """)
        appendInterpolation(since)
        appendLiteral("::timestamptz)")
    }
}

extension FirstPurchaseCatchUp.Invalidation {
    /// The report day cache's (migration 0013, `ReportDayCache`): deletes, in every cached time zone,
    /// the cached days the entries recorded since can change, or every cached day. Every
    /// `FirstPurchaseCatchUp` passes it: the reports own the cache, and the catch-up moves the
    /// watermark their readers trust it by.
    public static let reportDays = Self(what: "stale report days") { recorded, connection in
        switch recorded {
        case .everything:
            return try await connection.execute("DELETE FROM report_days")
        case .since(let since):
            // Nothing to read when nothing is cached (a server whose reports never ran).
            let cached = try await connection.query("SELECT EXISTS (SELECT 1 FROM report_days)").single().decode(
                Bool.self, at: 0)
            guard cached else { return 0 }
            return try await connection.execute(
                """
                DELETE FROM report_days d
                USING (
                    SELECT DISTINCT z.time_zone, (t.at AT TIME ZONE z.time_zone)::date AS day
                    FROM (SELECT DISTINCT time_zone FROM report_days) z
                    CROSS JOIN \(instantsTouchedSince: since) t
                ) x
                WHERE d.time_zone = x.time_zone AND d.day = x.day
                """)
        }
    }
}
