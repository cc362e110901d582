import CivilDates
import Foundation
import Ledger
import Receipts
import TestSupport
import Testing

@testable import Reports

/// `--reporting-currency` with `--fx-rates`: production totals converted per day at that day's
/// rate (or the last earlier one), rounded once per day and currency, half to even.
@Suite("Reporting currency")
struct ReportingCurrencyTests {
    static func rates(_ text: String, to currency: String = "USD", file: String = "rates.csv") throws -> ReportOptions {
        let rates = try FXRates.parse(Array(text.utf8), fileName: file, reportingCurrency: currency)
        return ReportOptions(reportingCurrency: ReportingCurrency(rates: rates))
    }

    /// The error `text` is refused with.
    static func refusal(_ text: String, to currency: String = "USD") -> ReportError? {
        do {
            _ = try FXRates.parse(Array(text.utf8), fileName: "rates.csv", reportingCurrency: currency)
            return nil
        } catch {
            return error
        }
    }

    static let header = "date,currency,rate_per_unit_of_reporting_currency\n"

    @Test("a tie rounds to even both ways, other quotients to the nearest milliunit, negatives symmetrically")
    func exactRounding() throws {
        let rate = try ExactRate.parse("1600").get()
        // 2,500,000 / 1600 = 1562.5: a tie, 1562 is even → 1562.
        #expect(try rate.convert(2_500_000) == 1562)
        // 2,508,000 / 1600 = 1567.5: a tie, 1567 is odd → 1568.
        #expect(try rate.convert(2_508_000) == 1568)
        // 2,501,000 / 1600 = 1563.125 → 1563; 2,501,800 / 1600 = 1563.625 → 1564.
        #expect(try rate.convert(2_501_000) == 1563)
        #expect(try rate.convert(2_501_800) == 1564)
        #expect(try rate.convert(-2_500_000) == -1562 && rate.convert(-2_508_000) == -1568)
        // A rate with decimals: 1,000,000 / 1391.25 = 718.77808... → 719.
        #expect(try ExactRate.parse("1391.25").get().convert(1_000_000) == 719)
        // Through the euro: KRW per USD = 1650.30 / 1.1617 = 16503000/11617; 3,300,000 KRW milli is
        // 3,300,000 × 11617 / 16,503,000 = 2322.9776... → 2323 USD milli.
        let cross = try ExactRate.parse("1650.30").get().dividedBy(try ExactRate.parse("1.1617").get())
        #expect(cross.numerator == 16_503_000 && cross.denominator == 11_617)
        #expect(try cross.convert(3_300_000) == 2323)
        // The largest amount with the largest rate's denominator does not trap: it is refused.
        let tiny = try ExactRate.parse("0.000000000001").get()
        #expect(throws: ReportError.self) { try tiny.convert(Int64.max) }
        #expect(try ExactRate.parse("1").get().convert(Int64.max) == Int64.max)
    }

    @Test("malformed rates files are refused with the file, line and column")
    func malformed() {
        let cases: [(String, String)] = [
            (Self.header + "2026-11-02,KRW,1391.25\n2026-11-03,KRW,13x1\n", "rates.csv line 3, column 16: rate '13x1'"),
            (Self.header + "2026-11-02,KRW,-5\n", "line 2, column 16"),
            (Self.header + "2026-11-02,KRW,0.000\n", "line 2, column 16: rate '0.000': a rate must be above zero"),
            (Self.header + "2026-11-02,KRW,0\n", "above zero"),
            (Self.header + "2026-13-01,KRW,1391.25\n", "line 2, column 1: '2026-13-01' is not a date"),
            (Self.header + "2026-11-02,krw,1391.25\n", "line 2, column 12: 'krw' is not a 3-letter currency code"),
            (Self.header + "2026-11-02,KRW,1391.25,\n", "line 2, column 24: 4 fields"),
            (Self.header + "2026-11-02,KRW,1391.25\n2026-11-02,KRW,1392\n", "line 3, column 1: a second rate of KRW"),
            (Self.header + "2026-11-02,USD,1.01\n", "line 2, column 16: the reporting currency USD"),
            (Self.header + "2026-11-02,KRW,1234567890123456789\n", "line 2, column 16"),
            (Self.header + "2026-11-02,KRW,\"1391.25\"\n", "line 2, column 16: quoted fields"),
            ("day,currency,rate\n2026-11-02,KRW,1391.25\n", "rates.csv line 1, column 1: the header is neither"),
            ("", "rates.csv line 1, column 1: the file is empty"),
            ("Date,USD,JPY,\n2026-11-02,1.16,175.4\n", "line 2, column 17: 3 fields under a header of 4"),
            ("Date,USD,JPY,\n2026-11-02,1.16,175.4,9\n", "line 2, column 23: a value under the header's empty"),
            ("Date,USD,JPY,\n2026-11-02,1.16,1,75.4\n", "line 2"),
            ("Date,USD,EUR,\n", "line 1, column 10: 'EUR' is not a currency quoted against the euro"),
            ("Date,JPY,KRW,\n2026-11-02,175.4,1650.3,\n", "quotes no USD"),
        ]
        for (text, expected) in cases {
            let error = Self.refusal(text)
            #expect(error?.code == .invalidFXRates, "\(text.debugDescription)")
            #expect(error?.message.contains(expected) == true, "\(error?.message ?? "accepted"), not \(expected)")
        }
        let huge = Self.refusal(String(repeating: "x", count: FXRates.maximumBytes + 1))
        #expect(huge?.message.contains("larger than 32 MiB") == true, "\(huge?.message ?? "accepted")")
        #expect(Self.refusal(Self.header, to: "usd")?.code == .invalidInput)
    }

    /// The ECB's file in its real shape (the columns cut down): newest first, `N/A`, a trailing comma.
    static let ecb = """
        Date,USD,JPY,BGN,CYP,KRW,
        2026-11-09,1.1650,176.20,1.9558,N/A,1655.10,
        2026-11-06,1.1617,175.43,1.9558,N/A,1650.30,
        2026-11-05,1.1590,N/A,1.9558,N/A,1648.00,

        """

    @Test("ECB rates are crossed through the euro exactly; N/A and the trailing column are read")
    func ecbParsed() throws {
        let rates = try FXRates.parse(Array(Self.ecb.utf8), fileName: "eurofxref-hist.csv", reportingCurrency: "USD")
        #expect(rates.source == .ecb)
        // KRW per USD on 2026-11-06 = 1650.30 / 1.1617 = 16503000 / 11617.
        let krw = try #require(rates.rate(of: "KRW", on: day("2026-11-06")))
        #expect(krw.date == day("2026-11-06") && krw.rate.numerator == 16_503_000 && krw.rate.denominator == 11_617)
        #expect(krw.rate.text == "1650.30 / 1.1617")
        // Saturday: Friday's rate. JPY is N/A on 2026-11-05: nothing on or before it.
        #expect(rates.rate(of: "KRW", on: day("2026-11-07"))?.date == day("2026-11-06"))
        #expect(rates.rate(of: "JPY", on: day("2026-11-05")) == nil)
        #expect(rates.rate(of: "CYP", on: day("2026-11-09")) == nil)
        // EUR per USD = 1 / 1.1617 = 10000 / 11617.
        let eur = try #require(rates.rate(of: "EUR", on: day("2026-11-06")))
        #expect(eur.rate.numerator == 10_000 && eur.rate.denominator == 11_617)
        #expect(rates.rate(of: "USD", on: day("2026-11-07"))?.rate == .one)
        // A day the reporting currency is not quoted crosses nothing: the last day both are quoted.
        let gap = try FXRates.parse(
            Array("Date,USD,KRW,\n2026-11-09,N/A,1655.10,\n2026-11-06,1.1617,1650.30,\n".utf8), fileName: "g.csv",
            reportingCurrency: "USD")
        #expect(gap.rate(of: "KRW", on: day("2026-11-09"))?.date == day("2026-11-06"))
        #expect(gap.rate(of: "EUR", on: day("2026-11-09"))?.date == day("2026-11-06"))
        // In euros, the rates are the file's own; CRLF line ends read the same.
        let euro = try FXRates.parse(
            Array(Self.ecb.replacingOccurrences(of: "\n", with: "\r\n").utf8), fileName: "e.csv",
            reportingCurrency: "EUR")
        #expect(euro.rate(of: "USD", on: day("2026-11-05"))?.rate.text == "1.1590")
    }

    @Test("a range by week through ECB rates: a Saturday at Friday's rate, listed; totals by hand")
    func ecbRangeWithFallback() async throws {
        try await withReportLedger { db, ledger in
            for uid in ["alice", "bob", "carol"] { _ = try await ledger.register(uid: uid, profile: testProfile) }
            _ = try await ledger.recordPurchase(
                transaction("fri", item: .face(1), at: instant("2026-11-06T10:00:00Z"), price: 3_300_000), for: "alice")
            _ = try await ledger.recordPurchase(
                transaction("sat", item: .face(2), at: instant("2026-11-07T10:00:00Z"), price: 2_200_000), for: "bob")
            _ = try await ledger.recordPurchase(
                transaction(
                    "mon", item: .background(1), at: instant("2026-11-09T10:00:00Z"), price: 1_200_000, currency: "JPY"),
                for: "carol")
            let options = try Self.rates(Self.ecb, file: "eurofxref-hist.csv")
            let report = try await RevenueReporter(client: db.client).range(
                from: day("2026-11-06"), through: day("2026-11-09"), by: .week, options: options)
            let converted = try #require(report.converted)
            // KRW per USD on Friday = 1650.30 / 1.1617 = 16503000/11617.
            // Friday: gross 3,300,000 × 11617 / 16,503,000 = 2322.978 → 2323; commission 30% = 990 KRW:
            //   990,000 × 11617 / 16,503,000 = 696.893 → 697.
            // Saturday (no ECB row) at Friday's rate: gross 2,200,000 → 1548.652 → 1549; commission
            //   660,000 → 464.596 → 465.
            // Monday: JPY per USD = 176.20 / 1.1650; gross 1,200,000 × 1.1650 / 176.20 = 7934.166 → 7934;
            //   commission 360,000 → 2380.250 → 2380.
            #expect(converted.periods.map(\.grossMilli) == [2323 + 1549, 7934])
            #expect(converted.periods.map(\.commissionMilli) == [697 + 465, 2380])
            #expect(converted.periods.map(\.proceedsMilli) == [3872 - 1162, 7934 - 2380])
            #expect(converted.whole.grossMilli == 11_806 && converted.whole.proceedsMilli == 8264)
            #expect(converted.periods.map(\.purchases) == [2, 1] && converted.whole.buyers == 3)
            #expect(
                converted.fallbacks == [
                    .init(day: day("2026-11-07"), currency: "KRW", rateDate: day("2026-11-06"))
                ])
            try await withTemporaryFolder { folder in
                let written = try writeAndRead(report, to: folder)
                let rows = written.rows(level: "converted")
                #expect(rows.map { $0["period_start"]! } == ["2026-11-06", "2026-11-09"])
                #expect(rows.map { $0["currency"]! } == ["USD", "USD"])
                #expect(rows.map { $0["gross"]! } == ["3.872", "7.934"])
                #expect(rows.map { $0["estimated_proceeds"]! } == ["2.71", "5.554"])
                #expect(rows.map { $0["net_revenue"]! } == ["3.872", "7.934"])
                let markdown = written.markdown
                #expect(markdown.contains("## In USD"))
                #expect(markdown.contains("rounded once per day and currency, half to even"))
                #expect(markdown.contains("crossed through the euro"))
                #expect(
                    markdown.contains(
                        "Converted at an earlier day's rate (the file has none for the day): 2026-11-07: KRW at the rate of 2026-11-06."
                    ))
                #expect(markdown.contains(try Regex("\\| \\*\\*Whole range\\*\\* +\\| +3 \\| +11\\.806 \\|")))
                // The per-currency sections are still there.
                #expect(markdown.contains("### KRW") && markdown.contains("### JPY"))
            }
        }
    }

    @Test("rounding by hand over three days: ties to even both ways, a non-tie, USD at rate 1")
    func roundingByHand() async throws {
        try await withReportLedger { db, ledger in
            for uid in ["alice", "bob", "carol", "dan"] {
                _ = try await ledger.register(uid: uid, profile: testProfile)
            }
            let purchases: [(String, String, ItemID, String, Int64, String)] = [
                ("a", "alice", .face(1), "2026-11-02T10:00:00Z", 2_500_000, "KRW"),
                ("b", "bob", .face(1), "2026-11-02T11:00:00Z", 990, "USD"),
                ("c", "carol", .face(1), "2026-11-03T10:00:00Z", 2_508_000, "KRW"),
                ("d", "dan", .face(1), "2026-11-04T10:00:00Z", 2_501_000, "KRW"),
            ]
            for (id, uid, item, at, price, currency) in purchases {
                _ = try await ledger.recordPurchase(
                    transaction(id, item: item, at: instant(at), price: price, currency: currency), for: uid)
            }
            let options = try Self.rates(
                Self.header + "2026-11-02,KRW,1600\n2026-11-03,KRW,1600.00\n2026-11-04,KRW,1600\n")
            let report = try await RevenueReporter(client: db.client).range(
                from: day("2026-11-02"), through: day("2026-11-04"), by: .day, options: options)
            let converted = try #require(report.converted)
            // 11-02: KRW 2,500,000 / 1600 = 1562.5, a tie, 1562 even → 1562; plus USD 990 at rate 1 → 2552.
            //   Commission: KRW 750,000 / 1600 = 468.75 → 469; USD 0.297 half up to the cent 300 → 769.
            // 11-03: KRW 2,508,000 / 1600 = 1567.5, a tie, 1567 odd → 1568. Commission 30% of 2508 KRW =
            //   752.4, half up to the won 752 → 752,000 / 1600 = 470.
            // 11-04: KRW 2,501,000 / 1600 = 1563.125 → 1563. Commission 750.3 → 750 KRW → 468.75 → 469.
            #expect(converted.periods.map(\.grossMilli) == [2552, 1568, 1563])
            #expect(converted.periods.map(\.commissionMilli) == [769, 470, 469])
            #expect(converted.periods.map(\.proceedsMilli) == [1783, 1098, 1094])
            // The whole range is the sum of its days: 2552 + 1568 + 1563 = 5683; 1783 + 1098 + 1094 = 3975.
            #expect(converted.whole.grossMilli == 5683 && converted.whole.proceedsMilli == 3975)
            #expect(converted.fallbacks.isEmpty)
            try await withTemporaryFolder { folder in
                let (csv, html) = try HTMLReportTests.writeAll(report, to: folder)
                #expect(csv.rows(level: "converted").map { $0["gross"]! } == ["2.552", "1.568", "1.563"])
                #expect(try HTMLFigures.rows(in: html) == csv.rows)
                #expect(html.contains("In USD"))
                #expect(csv.markdown.contains("Every day and currency converted had a rate of its own day"))
            }
        }
    }

    @Test("no rate on or before a day with revenue refuses the report with the date and currency")
    func missingRate() async throws {
        try await withReportLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(
                transaction("early", item: .face(1), at: instant("2026-11-05T10:00:00Z"), price: 2_500_000),
                for: "alice")
            let options = try Self.rates(Self.header + "2026-11-06,KRW,1391.25\n")
            let reporter = RevenueReporter(client: db.client)
            do {
                _ = try await reporter.range(
                    from: day("2026-11-04"), through: day("2026-11-06"), by: .week, options: options)
                Issue.record("the report was made without a KRW rate for 2026-11-05")
            } catch let error as ReportError {
                #expect(error.code == .missingFXRate)
                #expect(error.message.contains("rates.csv has no rate of KRW (per USD) on or before 2026-11-05"))
            }
            do {
                _ = try await reporter.daily(date: day("2026-11-06"), options: options)
                Issue.record("the daily report's trend holds 2026-11-05 without a KRW rate")
            } catch let error as ReportError {
                #expect(error.code == .missingFXRate && error.message.contains("2026-11-05"))
            }
            // A day without revenue needs no rate: the range from 2026-11-06 converts.
            let report = try await reporter.range(
                from: day("2026-11-06"), through: day("2026-11-06"), by: .day, options: options)
            #expect(report.converted?.whole.grossMilli == 0)
            // Like the other levels, a period without production lines has no converted CSV row.
            #expect(RevenueCSV.records(report).isEmpty)
        }
    }

    @Test("the daily report in USD: the day, its 14-day trend, the rates used; the HTML holds the CSV's rows")
    func dailyWithRandomLedger() async throws {
        try await withReportLedger { db, ledger in
            _ = try await RandomLedgerReportTests.recordRandomLedger(ledger, seed: 11)
            // Rates on Mondays, Wednesdays and Fridays only: the other days take the day before's
            // (or Friday's).
            var text = Self.header
            var date = day("2025-02-17")
            while date <= day("2025-03-31") {
                if [1, 3, 5].contains(date.isoWeekday) {
                    text += "\(date),KRW,1450.5\n\(date),JPY,149.25\n"
                }
                date = date.adding(days: 1)
            }
            let options = try Self.rates(text)
            let reporter = RevenueReporter(client: db.client)
            let plain = try await reporter.daily(date: day("2025-03-06"))
            let report = try await reporter.daily(date: day("2025-03-06"), options: options)
            let converted = try #require(report.converted)
            #expect(converted.trend.count == RevenueReporter.trendDays)
            #expect(converted.whole == converted.trend.last)
            // Units are every currency's, not converted.
            let production = report.whole.currencies(in: "production").map {
                report.whole.total(book: "production", currency: $0)
            }
            #expect(converted.whole.purchases == production.reduce(0) { $0 + $1.purchases })
            #expect(converted.whole.purchases > 0)
            #expect(!converted.fallbacks.isEmpty)
            for fallback in converted.fallbacks {
                #expect(
                    [2, 4, 6, 7].contains(fallback.day.isoWeekday) && fallback.rateDate.isoWeekday != 2
                        && fallback.rateDate < fallback.day, "\(fallback)")
            }
            for used in converted.used where used.currency != "USD" {
                #expect(used.rate.date == used.day || converted.fallbacks.contains { $0.day == used.day })
            }
            try await withTemporaryFolder { folder in
                let (csv, html) = try HTMLReportTests.writeAll(report, to: folder)
                #expect(try HTMLFigures.rows(in: html) == csv.rows)
                #expect(csv.rows(level: "converted").count == 1)
                #expect(
                    html.contains("<figcaption>Net revenue (USD, all currencies converted), 2025-02-21 to 2025-03-06"))
                #expect(csv.markdown.contains("Converted at an earlier day's rate (the file has none for the day): "))
                // Without the option the report is what it was: the same rows minus the converted one.
                let before = try writeAndRead(plain, to: folder + "/plain")
                #expect(before.rows == csv.rows.filter { $0["level"] != "converted" })
                #expect(!before.markdown.contains("In USD"))
                // And the Markdown is the same text with the "In USD" section taken out.
                let markdown = csv.markdown
                let start = try #require(markdown.range(of: "## In USD\n\n"))
                let end = try #require(markdown.range(of: "\n\n## ", range: start.upperBound..<markdown.endIndex))
                #expect(markdown[..<start.lowerBound] + "## " + markdown[end.upperBound...] == before.markdown)
            }
        }
    }
}
