import Foundation
import Ledger
import Reports
import TestSupport
import Testing

@Suite("Range report")
struct RangeReportTests {
    @Test("by week: one row per week clipped to the range, and buyers counted once over the range")
    func byWeek() async throws {
        try await withReportLedger { db, ledger in
            let events = try await RandomLedgerReportTests.recordRandomLedger(ledger, seed: 3)
            let reporter = RevenueReporter(client: db.client)
            // 2025-03-01 is a Saturday: weeks 03-01…03-02, 03-03…03-09, 03-10…03-12.
            let report = try await reporter.range(from: day("2025-03-01"), through: day("2025-03-12"), by: .week)
            #expect(
                report.periods.map(\.period.label) == [
                    "2025-03-01 – 2025-03-02", "2025-03-03 – 2025-03-09", "2025-03-10 – 2025-03-12",
                ])
            #expect(report.folderName == "2025-03-01_2025-03-12_by-week")
            try await withTemporaryFolder { folder in
                let written = try writeAndRead(report, to: folder)
                // The middle week holds every day of the random ledger's purchases.
                for row in written.rows(level: "currency") where row["period_start"] == "2025-03-03" {
                    let currency = row["currency"]!
                    var gross: Int64 = 0
                    for date in 3...9 {
                        gross +=
                            events.expected(day: "2025-03-0\(date)", zone: "UTC")[
                                .init(currency: currency, kind: nil, index: nil)]?.gross ?? 0
                    }
                    #expect(milli(row["gross"]) == gross, "\(currency)")
                    #expect(row["period_end"] == "2025-03-09")
                }
                #expect(written.rows(level: "currency").contains { $0["period_start"] == "2025-03-03" })
                let buyers = Set(events.sales.filter { $0.production && $0.bought && $0.currency == "KRW" }.map(\.uid))
                    .count
                #expect(report.whole.total(book: "production", currency: "KRW").buyers == buyers)
                let markdown = written.markdown
                #expect(markdown.contains("# Revenue report for 2025-03-01 to 2025-03-12 by week (UTC)"))
                #expect(markdown.contains("3 weeks (Monday to Sunday; the first and last may be partial)"))
                #expect(
                    markdown.contains(try Regex("\\| \\*\\*Whole range\\*\\* +\\| +\\d+ \\| .* \\| +\(buyers) \\| ")))
            }
        }
    }

    @Test("by month and by day divide the range on calendar boundaries")
    func byMonthAndDay() async throws {
        #expect(
            ReportGrouping.month.periods(from: day("2025-01-15"), through: day("2025-03-02")).map {
                "\($0.lowerBound)…\($0.upperBound)"
            }
                == ["2025-01-15…2025-01-31", "2025-02-01…2025-02-28", "2025-03-01…2025-03-02"])
        #expect(ReportGrouping.day.periods(from: day("2024-02-28"), through: day("2024-03-01")).count == 3)
        #expect(ReportGrouping.week.periods(from: day("2025-03-03"), through: day("2025-03-09")).count == 1)
        try await withReportLedger { db, _ in
            let reporter = RevenueReporter(client: db.client)
            await #expect(throws: ReportError.self) {
                _ = try await reporter.range(from: day("2025-03-02"), through: day("2025-03-01"), by: .day)
            }
            do {
                _ = try await reporter.range(from: day("2020-01-01"), through: day("2025-01-01"), by: .day)
                Issue.record("a 5-year range by day was accepted")
            } catch let error as ReportError {
                #expect(error.message.contains("group by week or month"))
            }
            let months = try await reporter.range(from: day("2020-01-01"), through: day("2025-01-01"), by: .month)
            #expect(months.periods.count == 61)
        }
    }
}
