import Foundation
import Ledger
import Postgres
import Reports
import Seeding
import TestSupport
import Testing

@Suite("Seeding synthetic purchases")
struct SeedTests {
    @Test("a seeded ledger passes every reconciliation check, and its rows are what the summary says")
    func seededLedgerReconciles() async throws {
        try await withReportLedger { db, _ in
            let configuration = SeedConfiguration(
                purchases: 6_000, days: 40, lastDay: day("2025-06-30"), seed: 9, batchSize: 2_500)
            let summary = try await LedgerSeeder(client: db.client, invalidating: .reportDays).seed(configuration)
            #expect(summary.purchases == 6_000 && summary.users == 2_000)
            func count(_ sql: String) async throws -> Int {
                try await db.client.query(PostgresQuery(unsafeSQL: sql)).single().decode(Int.self, at: 0)
            }
            #expect(try await count("SELECT count(*) FROM purchases") == 6_000)
            #expect(try await count("SELECT count(*) FROM users") == 2_000)
            #expect(try await count("SELECT count(*) FROM journal_entries") == summary.journalEntries)
            #expect(try await count("SELECT count(*) FROM journal_entries WHERE kind = 'refund'") == summary.refunds)
            #expect(
                try await count("SELECT count(*) FROM journal_entries WHERE kind = 'refund_reversal'")
                    == summary.reversals)
            #expect(
                try await count("SELECT count(*) FROM purchases WHERE ownership = 'FAMILY_SHARED'")
                    == summary.familyShared)
            #expect(summary.refunds > 60 && summary.reversals > 0 && summary.familyShared > 40 && summary.revokes > 0)
            #expect(try await count("SELECT count(DISTINCT currency) FROM purchases") == 4)
            #expect(try await count("SELECT count(DISTINCT book) FROM purchases") == 3)
            #expect(
                try await count(
                    "SELECT count(*) FROM purchases WHERE purchased_at < '2025-05-22' OR purchased_at >= '2025-07-01'")
                    == 0)
            // The ledger's own writer still works afterwards (the identity sequence moved past the seeded ids).
            let ledger = LedgerStore(client: db.client)
            _ = try await ledger.register(uid: "after-seed", profile: testProfile)
            let outcome = try await ledger.recordPurchase(
                transaction("after", item: .face(1), at: instant("2025-06-30T12:00:00Z"), price: 1_200_000),
                for: "after-seed")
            guard case .recorded = outcome else { Issue.record("\(outcome)"); return }
            // Seeding again with the same seed is refused before anything is written.
            await #expect(throws: SeedError.self) {
                _ = try await LedgerSeeder(client: db.client, invalidating: .reportDays).seed(configuration)
            }
            #expect(try await count("SELECT count(*) FROM purchases") == 6_001)
        }
    }

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

    @Test("bad seed settings are refused with a clear message")
    func badSettings() throws {
        let last = day("2025-01-01")
        #expect(throws: SeedError.self) { try SeedConfiguration(purchases: 0, days: 10, lastDay: last).validate() }
        #expect(throws: SeedError.self) { try SeedConfiguration(purchases: 100, days: 0, lastDay: last).validate() }
        do {
            try SeedConfiguration(purchases: 100, days: 10, users: 5, lastDay: last).validate()
            Issue.record("5 users for 100 purchases was accepted")
        } catch let error as SeedError {
            #expect(error.message.contains("--users must be between 10"))
        }
    }
}
