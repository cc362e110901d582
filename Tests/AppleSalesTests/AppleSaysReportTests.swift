import AppleSales
import CivilDates
import Foundation
import Ledger
import Postgres
import Reports
import TestSupport
import Testing

/// The daily report's "Apple says" section: present when Apple's report of the same date was
/// imported, naming Apple's Pacific day, absent (the report unchanged) otherwise.
@Suite("The daily report's Apple says section")
struct AppleSaysReportTests {
    @Test("Markdown and HTML show the comparison and say which of Apple's days it is")
    func section() async throws {
        try await withSalesLedger("apple_says") { db, ledger in
            try await AppleSalesComparisonTests.recordDay(ledger)
            let date = AppleSalesComparisonTests.day
            let options = ReportOptions(timeZone: "Asia/Seoul")
            let before = RevenueMarkdown.render(
                try await RevenueReporter(client: db.client).daily(date: date, options: options))
            #expect(!before.contains("Apple says"), "no section without an imported report")

            var generator = try await SalesReportGenerator.fromLedger(db.client, date: date)
            generator.rows.append(
                .init(
                    sku: productId(.background(5)), units: 1, customerPriceMilli: 3_000_000, customerCurrency: "KRW",
                    countryCode: "KR"))
            _ = try await AppleSalesImporter(client: db.client).importReport(
                bytes: generator.gzipped(), fileName: "S_D_80012345_20250309.txt.gz")
            let report = try await RevenueReporter(client: db.client).daily(date: date, options: options)
            let markdown = RevenueMarkdown.render(report)
            #expect(markdown.contains("## Apple says"), "\(markdown)")
            #expect(
                markdown.contains(
                    "**2025-03-09 Pacific time** (America/Los_Angeles, 2025-03-09 08:00:00 to 2025-03-10 07:00:00 UTC"))
            #expect(
                markdown.contains(
                    "This report's day is 2025-03-09 in Asia/Seoul: the same calendar date, not the same hours"))
            #expect(markdown.contains("**Matched:** 4"))
            #expect(markdown.contains("**Discrepancies:** 1"))
            #expect(markdown.contains(productId(.background(5))) && markdown.contains("Apple sold, we never recorded"))
            // The section comes before the reconciliation, after the day's figures.
            let apple = try #require(markdown.range(of: "## Apple says"))
            let reconciliation = try #require(markdown.range(of: "## Reconciliation"))
            #expect(apple.lowerBound < reconciliation.lowerBound)
            let html = RevenueHTML.render(report)
            #expect(html.contains("Apple says") && html.contains(productId(.background(5))), "the HTML has it too")
            // Everything else in the report is as it was.
            #expect(
                markdown.components(separatedBy: "\n## Apple says")[0]
                    == before.components(separatedBy: "\n## Reconciliation")[0])
        }
    }
}
