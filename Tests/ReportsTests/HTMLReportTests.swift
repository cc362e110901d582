import CSV
import Foundation
import Ledger
import Postgres
import TestSupport
import Testing

@testable import Reports

@Suite("HTML report")
struct HTMLReportTests {
    /// Writes `report` in all three formats and reads the CSV rows and the HTML text back.
    static func writeAll(_ report: RevenueReport, to folder: String) throws -> (csv: WrittenReport, html: String) {
        let paths = try ReportWriter(outputDirectory: folder).write(report, formats: ReportFormat.defaults)
        #expect(paths.map { ($0 as NSString).lastPathComponent } == ["revenue.csv", "revenue.md", "revenue.html"])
        let csv = try writeAndRead(report, to: folder)
        let html = try String(contentsOfFile: paths[2], encoding: .utf8)
        return (csv, html)
    }

    @Test("every figure in the HTML parses back equal to the CSV, daily and by week")
    func figuresEqualCSV() async throws {
        try await withReportLedger { db, ledger in
            _ = try await RandomLedgerReportTests.recordRandomLedger(ledger, seed: 11)
            let reporter = RevenueReporter(client: db.client)
            try await withTemporaryFolder { folder in
                for report in [
                    try await reporter.daily(date: day("2025-03-06")),
                    try await reporter.range(from: day("2025-03-01"), through: day("2025-03-20"), by: .week),
                ] {
                    let (csv, html) = try Self.writeAll(report, to: folder)
                    let figures = try HTMLFigures.rows(in: html)
                    #expect(csv.rows.count > 5)
                    #expect(figures == csv.rows)
                    // Korean names and each currency's precision, in the visible tables too.
                    #expect(html.contains("새싹"))
                    #expect(csv.rows.contains { $0["currency"] == "USD" })
                    let usd = try #require(csv.rows.first { $0["currency"] == "USD" && $0["level"] == "currency" })
                    #expect(html.contains(">\(usd["gross"]!)</td>"))
                }
            }
        }
    }

    @Test("the page is self-contained, mobile-ready, light and dark, with three kinds of SVG chart")
    func pageShape() async throws {
        try await withReportLedger { db, ledger in
            _ = try await RandomLedgerReportTests.recordRandomLedger(ledger, seed: 11)
            let html = RevenueHTML.render(try await RevenueReporter(client: db.client).daily(date: day("2025-03-06")))
            #expect(html.hasPrefix("<!DOCTYPE html>\n<html lang=\"en\">"))
            #expect(html.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"))
            #expect(html.contains("@media (prefers-color-scheme: dark)"))
            #expect(html.contains("default-src 'none'"))
            for forbidden in ["<script", "<link", "<img", "@import", "url(", "src="] {
                #expect(!html.contains(forbidden), "the page holds \(forbidden)")
            }
            #expect(html.contains("<figcaption>Net revenue (KRW), 2025-02-21 to 2025-03-06</figcaption>"))
            #expect(html.contains("<figcaption>Units bought per item, 2025-03-06</figcaption>"))
            #expect(html.contains("<figcaption>First-time and returning buyers, 2025-02-21 to 2025-03-06</figcaption>"))
            #expect(html.components(separatedBy: "<svg ").count - 1 >= 4)  // a trend per currency, units, buyers
            #expect(html.contains("<h2>Reconciliation</h2>"))
            #expect(html.contains("PASS <code>report_totals_match_ledger</code>"))
        }
    }

    @Test("the same ledger writes the same bytes twice")
    func byteIdenticalReruns() async throws {
        try await withReportLedger { db, ledger in
            _ = try await RandomLedgerReportTests.recordRandomLedger(ledger, seed: 5)
            let reporter = RevenueReporter(client: db.client)
            try await withTemporaryFolder { folder in
                let first = try ReportWriter(outputDirectory: folder + "/a").write(
                    try await reporter.daily(date: day("2025-03-06")), formats: [.html])
                let second = try ReportWriter(outputDirectory: folder + "/b").write(
                    try await reporter.daily(date: day("2025-03-06")), formats: [.html])
                let bytes = try [first[0], second[0]].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
                #expect(bytes[0].count > 10_000)
                #expect(bytes[0] == bytes[1])
            }
        }
    }

    @Test("item names are escaped: markup in the catalog stays text")
    func escaping() async throws {
        try await withReportLedger { db, ledger in
            let hostile = "<script>alert(\"x\")</script> & '새싹' <b>"
            try await db.client.withConnection { connection in
                try await connection.query(
                    "UPDATE catalog_items SET name = \(hostile) WHERE kind = 'face' AND item_index = 2")
            }
            _ = try await ledger.register(uid: "mallory", profile: testProfile)
            _ = try await ledger.recordPurchase(
                transaction("t1", item: .face(2), at: instant("2025-03-09T10:00:00Z"), price: 2_500_000),
                for: "mallory")
            let report = try await RevenueReporter(client: db.client).daily(date: day("2025-03-09"))
            try await withTemporaryFolder { folder in
                let (csv, html) = try Self.writeAll(report, to: folder)
                #expect(!html.contains("<script"))
                #expect(!html.contains("<b>"))
                #expect(
                    html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;새싹&#39; &lt;b&gt;"))
                let figures = try HTMLFigures.rows(in: html)
                #expect(figures == csv.rows)
                #expect(figures.contains { $0["item_name"] == hostile })
            }
        }
    }

    @Test("inline marks become elements only after escaping")
    func inlineMarks() {
        #expect(
            HTMLDocument.inline("**Day:** `a<b>` & 'c'")
                == "<strong>Day:</strong> <code>a&lt;b&gt;</code> &amp; &#39;c&#39;")
    }
}

@Suite("Support grants in reports")
struct SupportGrantReportTests {
    @Test("compensation granted and revoked by support is listed as grants of book promotional, never revenue")
    func listedAsGrants() async throws {
        try await withReportLedger { db, ledger in
            _ = try await ledger.register(uid: "gina", profile: testProfile)
            let request = SupportRequest(actor: "support", reason: "lost after a store outage")
            let first = try await ledger.grantCompensation(.face(3), to: "gina", request)
            _ = try await ledger.grantCompensation(.background(2), to: "gina", request)
            _ = try await ledger.revokeCompensation(first.actionId, request)
            let today = try await db.client.query("SELECT ((now() AT TIME ZONE 'UTC')::date)::text").single()
                .decode(String.self, at: 0)
            let report = try await RevenueReporter(client: db.client).daily(date: day(today))
            try await withTemporaryFolder { folder in
                let (csv, html) = try HTMLReportTests.writeAll(report, to: folder)
                let face = try #require(csv.row(["book": "promotional", "item_kind": "face", "item_index": "3"]))
                #expect(face["support_grants"] == "1" && face["support_revokes"] == "1" && face["net_revenue"] == "0")
                let background = try #require(
                    csv.row(["book": "promotional", "item_kind": "background", "item_index": "2"]))
                #expect(background["support_grants"] == "1" && background["support_revokes"] == "0")
                #expect(csv.rows.allSatisfy { $0["book"] == "promotional" })
                #expect(try HTMLFigures.rows(in: html) == csv.rows)
                #expect(csv.markdown.contains("Items support granted to users as compensation"))
                #expect(!csv.markdown.contains("| promotional"))  // not test traffic
                #expect(report.reconciled)
            }
        }
    }
}
