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
            // The SKU is text: escaped in the Markdown, shown as it is once rendered.
            let rendered = try GitHubMarkdown(rendering: markdown).html
            #expect(rendered.contains(productId(.background(5))) && markdown.contains("Apple sold, we never recorded"))
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

    @Test("Apple's SKUs and product types and the file's name are text in the Markdown and HTML")
    func hostileText() async throws {
        try await withSalesLedger("apple_says_hostile") { db, ledger in
            try await AppleSalesComparisonTests.recordDay(ledger)
            let date = AppleSalesComparisonTests.day
            var generator = try await SalesReportGenerator.fromLedger(db.client, date: date)
            // Apple-only lines: each SKU is a discrepancy row of its own.
            let skus = [
                "[click](https://attacker.invalid/phish)", "![](https://attacker.invalid/pixel.png)",
                "<img src=x onerror=alert(1)>", "<script>alert(2)</script>", "a | b", "one\rtwo",
                "`x` **y** _z_ ~~gone~~ <https://attacker.invalid> www.attacker.invalid",
            ]
            for sku in skus {
                generator.rows.append(
                    .init(
                        sku: sku, units: 1, customerPriceMilli: 1_000_000, customerCurrency: "KRW", countryCode: "KR"))
            }
            let productType = "<img src=x onerror=alert(3)>"
            generator.rows.append(
                .init(
                    sku: "restore", productType: productType, units: 1, customerPriceMilli: 0, customerCurrency: "KRW",
                    countryCode: "KR"))
            let fileName = "S_D_`x`<img src=x onerror=alert(4)>_20250309.txt"
            _ = try await AppleSalesImporter(client: db.client).importReport(
                bytes: generator.text(), fileName: fileName)
            let report = try await RevenueReporter(client: db.client).daily(date: date)
            let markdown = RevenueMarkdown.render(report)
            let rendered = try GitHubMarkdown(rendering: markdown)
            // Only the elements the report makes itself: no a, img, script, del, ….
            #expect(rendered.foreignElements.isEmpty, "\(rendered.foreignElements)")
            #expect(GitHubMarkdown.brokenTableLines(in: markdown).isEmpty)
            let products = Set(rendered.tableRows.compactMap(\.first))
            // A line break in a SKU would end the table's row: it is a space.
            for sku in skus.map({ $0 == "one\rtwo" ? "one two" : $0 }) {
                let found = products.contains(GitHubMarkdown.escaped(sku))
                #expect(found, "no product cell shows \(sku) as text")
            }
            let fileNameAsCode = rendered.html.contains("<code>" + GitHubMarkdown.escaped(fileName) + "</code>")
            #expect(fileNameAsCode, "the file's name is not one code element")
            let productTypeAsText = rendered.html.contains(
                "Not compared: " + GitHubMarkdown.escaped(productType) + " 1 rows")
            #expect(productTypeAsText, "Apple's product type is not text")

            let html = RevenueHTML.render(report)
            for element in ["<a ", "<img", "<script", "<del"] {
                #expect(!html.contains(element), "\(element)")
            }
        }
    }
}
