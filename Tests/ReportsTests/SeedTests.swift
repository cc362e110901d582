import Foundation
import Ledger
import Postgres
import Reports
import Seeding
import TestSupport
import Testing

@Suite("Reports over a seeded ledger")
struct SeedTests {
    @Test("a daily report over a seeded ledger equals totals computed straight from the purchases and journal")
    func reportOverSeededLedger() async throws {
        try await withReportLedger { db, _ in
            _ = try await LedgerSeeder(client: db.client, invalidating: .reportDays).seed(
                SeedConfiguration(purchases: 3_000, days: 20, lastDay: day("2025-06-30"), seed: 4))
            let report = try await RevenueReporter(client: db.client).daily(date: day("2025-06-25"))
            #expect(report.reconciled)
            // Independently: production, bought, priced purchases and refunds on 2025-06-25 UTC.
            let rows = try await db.client.query(
                """
                SELECT p.currency,
                       count(*) FILTER (WHERE j.kind = 'purchase'),
                       coalesce(sum(p.price_milli) FILTER (WHERE j.kind = 'purchase'), 0),
                       coalesce(sum(p.price_milli) FILTER (WHERE j.kind = 'refund'), 0),
                       coalesce(sum(p.price_milli) FILTER (WHERE j.kind = 'refund_reversal'), 0),
                       count(DISTINCT p.uid) FILTER (WHERE j.kind = 'purchase')
                FROM journal_entries j JOIN purchases p USING (store, environment, transaction_id)
                WHERE j.effective_at >= '2025-06-25 00:00+00' AND j.effective_at < '2025-06-26 00:00+00'
                  AND p.book = 'production' AND p.ownership = 'PURCHASED' AND p.price_milli IS NOT NULL
                GROUP BY p.currency
                """)
            #expect(rows.count >= 2)
            for row in rows {
                let (currency, purchases, gross, refunded, reversed, buyers) = try row.decode(
                    (String, Int, Int64, Int64, Int64, Int).self)
                let line = report.whole.total(book: "production", currency: currency)
                #expect(line.purchases == purchases && line.grossMilli == gross, "\(currency)")
                #expect(line.netMilli == gross - refunded + reversed, "\(currency)")
                #expect(line.buyers == buyers, "\(currency)")
            }
        }
    }

    @Test("EXPLAIN: the daily report reads journal entries by an index range scan on its period")
    func indexRangeScans() async throws {
        try await withReportLedger { db, _ in
            let seeder = LedgerSeeder(client: db.client, invalidating: .reportDays)
            _ = try await seeder.seed(
                SeedConfiguration(purchases: 20_000, days: 365, lastDay: day("2025-06-30"), seed: 2))
            try await seeder.vacuum()
            let plans = try await RevenueReporter(client: db.client).explainDaily(
                date: day("2025-06-30"), options: ReportOptions(timeZone: "Asia/Seoul"))
            #expect(plans.count == 6)
            for (query, plan) in plans {
                let text = plan.joined(separator: "\n")
                // The report day cache's check reads what was recorded since the watermark instead.
                let byPeriod =
                    query.contains("changed since")
                    ? text.contains("purchases_by_recorded_at") && text.contains("journal_entry_rows_by_recorded_at")
                    : text.contains("_by_effective_at") || text.contains("purchases_by_purchased_at")
                #expect(byPeriod, "\(query):\n\(text)")
                #expect(!text.contains("Seq Scan"), "\(query):\n\(text)")
            }
        }
    }
}
