import AppleSales
import CivilDates
import Console
import Crypto
import Foundation
import HTTPTypes
import Ledger
import Logging
import Postgres
import Reports
import TestSupport
import Testing

@Suite struct MoneyPagesTests {
    static let daily = "/money/report?kind=daily&date=2025-03-09&tz=UTC"

    @Test func moneyPagesOpenForFinanceAndAdminAndAreRefusedForSupport() async throws {
        try await withConsole { client, db, _ in
            try await addOperator(db, "sora", role: .support)
            try await addOperator(db, "jun", role: .finance)
            try await addOperator(db, "hana", role: .admin)
            let pages = [
                "/money", Self.daily, "/money/report?kind=range&from=2025-03-01&to=2025-03-09&by=week&tz=UTC",
                "/money/report?kind=month&month=2025-03&tz=Asia%2FSeoul",
                "/money/report.csv?kind=daily&date=2025-03-09&tz=UTC", "/money/apple?date=2025-03-09",
            ]
            var support = Browser(client)
            try await support.signIn("sora", "correct horse battery")
            for page in pages {
                let answer = try await support.get(page)
                #expect(answer.status == .forbidden, "\(page)")
                #expect(!answer.body.contains("Revenue report"), "\(page)")
            }
            for name in ["jun", "hana"] {
                var browser = Browser(client)
                try await browser.signIn(name, "correct horse battery")
                for page in pages {
                    #expect(try await browser.get(page).status == .ok, "\(name) \(page)")
                }
            }
            var korean = Browser(client)
            korean.language = "ko"
            try await korean.signIn("jun", "correct horse battery")
            let index = try await korean.get("/money")
            #expect(index.body.contains("<h1>매출</h1>") && index.body.contains("<html lang=\"ko\">"))
            #expect(index.body.contains("<code>shopledger report</code>") && !index.body.contains("`"))
            // Every input of the page has a label naming it.
            for id in ["daily-date", "daily-tz", "range-from", "range-to", "range-by", "month-month", "apple-date"] {
                #expect(index.body.contains("<label for=\"\(id)\">"), "\(id)")
            }
            let month = try await korean.get("/money/report?kind=month&month=2025-03&tz=Asia%2FSeoul")
            #expect(month.body.contains("<nav aria-label=\"콘솔\" lang=\"ko\">"))
            #expect(month.body.contains("2025-03"))
        }
    }

    /// The page is the document `shopledger report daily` writes, from the same reporter: the same bytes
    /// but for the console's links; its CSV is the same CSV.
    @Test func theDailyReportPageAndItsCSVAreTheCLIsReport() async throws {
        try await withConsole { client, db, _ in
            let ledger = LedgerStore(client: db.client)
            try await recordConsolePurchase(ledger, "alice", "t1", item: .face(2), at: "2025-03-09T10:00:00Z")
            try await recordConsolePurchase(ledger, "bob", "t2", item: .face(3), at: "2025-03-09T11:00:00Z")
            try await recordConsolePurchase(ledger, "bob", "t3", item: .face(2), at: "2025-03-10T11:00:00Z")
            try await addOperator(db, "jun", role: .finance)
            var browser = Browser(client)
            try await browser.signIn("jun", "correct horse battery")

            let page = try await browser.get(Self.daily)
            #expect(page.status == .ok)
            let cli = try await RevenueReporter(client: db.client).daily(
                date: CalendarDate("2025-03-09")!, options: ReportOptions(timeZone: "UTC"))
            #expect(cli.whole.total(book: "production", currency: "KRW").purchases == 2)
            #expect(Self.withoutConsoleLinks(page.body) == RevenueHTML.render(cli))
            // Every header cell of the report's tables names its column's scope.
            #expect(page.body.contains("<th scope=\"col\"") && !page.body.contains("<th>"))
            #expect(!page.body.contains("<th class") && !page.body.contains("<th data-column"))
            #expect(page.body.contains("<a href=\"/money/report.csv?kind=daily&amp;date=2025-03-09&amp;tz=UTC\">"))

            // A policy as strict as the console's, naming the hash of the report's one inline style.
            let policy = try #require(page.headers[.contentSecurityPolicy])
            #expect(!policy.contains("unsafe-inline") && !policy.contains("script"))
            let style = try #require(Self.between("<style>", "</style>", in: page.body))
            let digest = Data(SHA256.hash(data: Data(style.utf8))).base64EncodedString()
            #expect(policy.contains("style-src 'sha256-\(digest)'"))

            let csv = try await browser.get("/money/report.csv?kind=daily&date=2025-03-09&tz=UTC")
            #expect(csv.status == .ok)
            #expect(csv.headers[.contentType] == "text/csv; charset=utf-8")
            #expect(csv.headers[.contentDisposition] == "attachment; filename=\"revenue-2025-03-09-UTC.csv\"")
            #expect(csv.body == RevenueCSV.render(cli))
            #expect(csv.body.contains("2500"))
            let recorded = try await db.client.query(
                "SELECT operator, target FROM console_events WHERE action = 'report_csv'"
            ).map { try $0.decode((String, String).self) }
            #expect(recorded.count == 1 && recorded.first?.0 == "jun" && recorded.first?.1 == "daily 2025-03-09 UTC")
        }
    }

    /// A report is served from the cache for a minute, then made again with what the ledger gained.
    @Test func aReportIsServedFromTheCacheForAMinuteOnly() async throws {
        try await withConsole { client, db, clock in
            let ledger = LedgerStore(client: db.client)
            try await recordConsolePurchase(ledger, "alice", "t1", item: .face(2), at: "2025-03-09T10:00:00Z")
            try await addOperator(db, "jun", role: .finance)
            var browser = Browser(client)
            try await browser.signIn("jun", "correct horse battery")
            let first = try await browser.get(Self.daily)
            try await recordConsolePurchase(ledger, "bob", "t2", item: .face(3), at: "2025-03-09T11:00:00Z")
            clock.advance(50)
            let cached = try await browser.get(Self.daily)
            #expect(cached.body == first.body)
            clock.advance(11)
            let fresh = try await browser.get(Self.daily)
            #expect(fresh.body != first.body)
            let cli = try await RevenueReporter(client: db.client).daily(
                date: CalendarDate("2025-03-09")!, options: ReportOptions(timeZone: "UTC"))
            #expect(cli.whole.total(book: "production", currency: "KRW").purchases == 2)
            #expect(Self.withoutConsoleLinks(fresh.body) == RevenueHTML.render(cli))
        }
    }

    @Test func aBadDateZoneOrRangeIsRefusedWithItsReason() async throws {
        try await withConsole { client, db, _ in
            try await addOperator(db, "jun", role: .finance)
            var browser = Browser(client)
            try await browser.signIn("jun", "correct horse battery")
            let zone = try await browser.get("/money/report?kind=daily&date=2025-03-09&tz=Mars%2FOlympus")
            #expect(zone.status == .badRequest && zone.body.contains("is not a time zone name the database knows"))
            let date = try await browser.get("/money/report?kind=daily&date=2025-02-30&tz=UTC")
            #expect(date.status == .badRequest && date.body.contains("YYYY-MM-DD"))
            let far = try await browser.get("/money/report?kind=daily&date=9999-12-31&tz=UTC")
            #expect(far.status == .badRequest)
            let long = try await browser.get("/money/report?kind=range&from=1990-01-01&to=2025-03-09&by=day&tz=UTC")
            #expect(long.status == .badRequest && long.body.contains("at most"))
            let backwards = try await browser.get("/money/report?kind=range&from=2025-03-09&to=2025-03-01&tz=UTC")
            #expect(backwards.status == .badRequest)
            let hostile = try await browser.get("/money/report?kind=daily&date=2025-03-09&tz=%3Cb%3E")
            #expect(hostile.status == .badRequest && !hostile.body.contains("<b>"))
        }
    }

    /// What `shopledger reconcile apple` shows: Apple said the day had no sales, so the ledger's sale of
    /// the day is a discrepancy; a day with no report says so.
    @Test func appleSalesReconciliationShowsTheDaysDiscrepancies() async throws {
        try await withConsole { client, db, _ in
            let ledger = LedgerStore(client: db.client)
            try await recordConsolePurchase(ledger, "alice", "t1", item: .face(2), at: "2025-03-09T20:00:00Z")
            _ = try await AppleSalesImporter(client: db.client).recordNoSales(date: CalendarDate("2025-03-09")!)
            try await addOperator(db, "jun", role: .finance)
            var browser = Browser(client)
            try await browser.signIn("jun", "correct horse battery")
            let page = try await browser.get("/money/apple?date=2025-03-09")
            #expect(page.status == .ok)
            #expect(page.body.contains("Discrepancies: 1."))
            #expect(page.body.contains("<th scope=\"row\">\(productId(.face(2)))</th>"))
            #expect(page.body.contains("we recorded, Apple never sold"))
            let index = try await browser.get("/money")
            #expect(index.body.contains("<li><a href=\"/money/apple?date=2025-03-09\">2025-03-09</a> (no sales)</li>"))
            let none = try await browser.get("/money/apple?date=2025-03-08")
            #expect(none.status == .ok && none.body.contains("No Summary Sales Report of 2025-03-08 was imported"))
        }
    }

    /// The report's document without the console's links above its title.
    static func withoutConsoleLinks(_ body: String) -> String {
        guard let start = body.range(of: "<nav aria-label="), let end = body.range(of: "</nav>\n") else {
            return body
        }
        return String(body[..<start.lowerBound]) + String(body[end.upperBound...])
    }

    static func between(_ open: String, _ close: String, in text: String) -> String? {
        guard let start = text.range(of: open), let end = text.range(of: close, range: start.upperBound..<text.endIndex)
        else { return nil }
        return String(text[start.upperBound..<end.lowerBound])
    }
}
