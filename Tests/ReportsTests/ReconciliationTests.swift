import Foundation
import Ledger
import Postgres
import Reports
import TestSupport
import Testing

@Suite("Report totals against the ledger")
struct ReconciliationTests {
    @Test("report_totals_match_ledger fails, naming the account, when postings disagree with the purchases")
    func checkFails() async throws {
        try await TestGate.reports.run {
            try await withTestDatabase { db in
                let ledger = LedgerStore(client: db.client)
                _ = try await ledger.register(uid: "ivy", profile: testProfile)
                _ = try await ledger.recordPurchase(
                    transaction("x", item: .face(4), at: instant("2025-07-07T07:00:00Z"), price: 2_500_000), for: "ivy")
                let passing = try await Reconciler(client: db.client, checks: [ReportTotalsCheck()]).run()
                #expect(passing.passed)
                // Two balances (revenue:face and receivable:app_store, KRW) and three lines split by store
                // (the item, its kind, the currency).
                #expect(passing.checks[0].examined == 5)
                // Balanced extra postings on the revenue account (the ledger's own balance check still
                // passes): revenue the purchases do not explain. The purchase's entry is derived from
                // its row (migration 0007), so stored postings naming it need the foreign keys off.
                try await db.client.withConnection { connection in
                    try await connection.query("SET session_replication_role = replica")
                    try await connection.query(
                        """
                        INSERT INTO posting_rows (transaction_id, entry_id, leg, account, currency, amount_milli)
                        SELECT transaction_id, entry_id, v.leg, v.account, 'KRW', v.amount
                        FROM journal_entries, (VALUES (3, 'receivable:app_store', 1000::bigint), (4, 'revenue:face', -1000::bigint)) v (leg, account, amount)
                        WHERE transaction_id = 'x'
                        """)
                    try await connection.query("RESET session_replication_role")
                }
                let failing = try await Reconciler(
                    client: db.client, checks: LedgerInvariants.all + [ReportTotalsCheck()]
                ).run()
                let check = try #require(failing.checks.first { $0.name == "report_totals_match_ledger" })
                #expect(!check.passed)
                #expect(
                    check.failures == [
                        ReconciliationFailure(
                            id: "receivable:app_store KRW",
                            detail:
                                "the report counts a balance of 2500000 milli, the ledger's postings sum to 2501000 milli"
                        ),
                        ReconciliationFailure(
                            id: "revenue:face KRW",
                            detail:
                                "the report counts a balance of -2500000 milli, the ledger's postings sum to -2501000 milli"
                        ),
                    ])
                #expect(failing.checks.first { $0.name == "postings_balance" }?.passed == true)
                // The daily report says so, at the top and in its last section.
                let report = try await RevenueReporter(client: db.client).daily(date: day("2025-07-07"))
                #expect(!report.reconciled)
                let markdown = RevenueMarkdown.render(report)
                #expect(markdown.contains("**Reconciliation:** **FAILED**"))
                #expect(markdown.contains("**FAIL** `report_totals_match_ledger`"))
                #expect(markdown.contains("`revenue:face KRW`"))
            }
        }
    }

    @Test("--reconcile full runs every ledger invariant in the report's snapshot")
    func fullReconciliation() async throws {
        try await withReportLedger { db, ledger in
            _ = try await RandomLedgerReportTests.recordRandomLedger(ledger, seed: 5)
            let report = try await RevenueReporter(client: db.client).daily(
                date: day("2025-03-04"), options: ReportOptions(reconciliation: .full))
            #expect(report.reconciled)
            let names = report.reconciliation.map(\.name)
            #expect(names.first == "report_totals_match_ledger")
            #expect(Set(names).isSuperset(of: LedgerInvariants.all.map(\.name)))
            #expect(names.contains("report_days_match_ledger"))
            // The day's totals check, every invariant, the cache check and the totals over all of history.
            #expect(report.reconciliation.count == LedgerInvariants.all.count + 3)
            #expect(!RevenueMarkdown.render(report).contains("Only this report's period was reconciled"))
        }
    }

    @Test("a time zone the database does not know is refused with a clear message")
    func unknownTimeZone() async throws {
        try await withReportLedger { db, _ in
            let reporter = RevenueReporter(client: db.client)
            for zone in ["Mars/Olympus", "KST", "UTC+9", ""] {
                do {
                    _ = try await reporter.daily(date: day("2025-01-01"), options: ReportOptions(timeZone: zone))
                    Issue.record("\(zone) was accepted")
                } catch let error as ReportError {
                    #expect(error.code == .unknownTimeZone)
                    #expect(error.message.contains("is not a time zone name the database knows"))
                }
            }
        }
    }
}
