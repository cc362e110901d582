import CivilDates
import Foundation
import Ledger
import TestSupport
import Testing

@testable import Reports

/// The figures operators expect (issue 28): refund rates, ARPPU, storefronts, the trailing 7/30/90
/// days, the month report, and the HTML's axis ticks and colours. The ledger figures are worked out
/// by hand in the comments.
@Suite("Reports: refund rates, ARPPU, storefronts, trailing days, month reports")
struct OperatorFiguresTests {
    // MARK: Arithmetic

    @Test("refund rates: one decimal, half up; over 100%; nothing to divide by gives none")
    func percentages() {
        #expect(OperatorRates.percent(1, of: 3) == "33.3")
        #expect(OperatorRates.percent(2, of: 3) == "66.7")
        #expect(OperatorRates.percent(1, of: 8) == "12.5")
        #expect(OperatorRates.percent(1, of: 16) == "6.3")  // 6.25 → half up
        #expect(OperatorRates.percent(0, of: 5) == "0.0")
        #expect(OperatorRates.percent(2, of: 1) == "200.0")
        #expect(OperatorRates.percent(50, of: 1) == "5,000.0")
        #expect(OperatorRates.percent(3, of: 0) == nil)
        #expect(OperatorRates.percent(0, of: 0) == nil)
        #expect(OperatorRates.percent(Int64.max, of: 1) != nil)  // no overflow
    }

    @Test("ARPPU rounds half to even, negative too, and is none without buyers")
    func arppu() {
        #expect(OperatorRates.quotientHalfEven(5, 2) == 2)
        #expect(OperatorRates.quotientHalfEven(7, 2) == 4)
        #expect(OperatorRates.quotientHalfEven(-5, 2) == -2)
        #expect(OperatorRates.quotientHalfEven(-7, 2) == -4)
        #expect(OperatorRates.quotientHalfEven(5_000_000, 3) == 1_666_667)
        #expect(OperatorRates.quotientHalfEven(4_000_000, 3) == 1_333_333)
        #expect(OperatorRates.quotientHalfEven(Int64.min, 1) == Int64.min)
        var line = RevenueFigures()
        line.grossMilli = 1_985
        #expect(OperatorRates.arppuMilli(line) == nil)
        line.buyers = 2
        #expect(OperatorRates.arppuMilli(line) == 992)  // 992.5 → the even 992
    }

    static let tickCases: [(Int64, Int64, Int64)] = [
        (0, 987_654_321_000, 1_000), (-64_600, 1_928_760, 10), (0, 0, 1_000), (0, 3, 1), (0, 40_535, 1),
        (-123_456_789_000, 0, 1_000), (0, 1, 1), (0, Int64.max, 1), (Int64.min, Int64.max, 1),
    ]

    @Test(
        "axis ticks are round steps from below the lowest to above the highest, zero among them",
        arguments: tickCases)
    func ticks(lowest: Int64, highest: Int64, minimumStep: Int64) {
        let ticks = AxisTicks(lowest: lowest, highest: highest, minimumStep: minimumStep)
        let values = ticks.values
        #expect(values.contains(0))
        #expect(values.first! <= lowest && values.last! >= highest)
        #expect((2...6).contains(values.count), "\(values)")
        #expect(ticks.step >= minimumStep)
        var mantissa = ticks.step
        while mantissa % 10 == 0 { mantissa /= 10 }
        #expect([1, 2, 5].contains(mantissa), "step \(ticks.step)")
        if highest < Int64.max / 2 && lowest > Int64.min / 2 {
            #expect(values.allSatisfy { $0 % ticks.step == 0 })
            #expect(zip(values, values.dropFirst()).allSatisfy { $1 - $0 == ticks.step })
        }
    }

    @Test("the large KRW, small USD and count axes get the expected round labels")
    func tickLabels() {
        #expect(
            AxisTicks(lowest: 0, highest: 987_654_321_000, minimumStep: 1_000).values == [
                0, 200_000_000_000, 400_000_000_000, 600_000_000_000, 800_000_000_000, 1_000_000_000_000,
            ])
        #expect(AxisTicks(lowest: 0, highest: 0, minimumStep: 1_000).values == [0, 1_000])
        #expect(AxisTicks(lowest: 0, highest: 3, minimumStep: 1).values == [0, 1, 2, 3])
        #expect(AxisTicks(lowest: 0, highest: 1_990, minimumStep: 10).values == [0, 500, 1_000, 1_500, 2_000])
        let chart = ReportChart(
            purpose: .trend, layout: .grouped, title: "t", currency: "KRW", categories: ["a", "b"],
            series: [
                .init(name: "net revenue", values: [2_500_000, 7_400_000]), .init(name: "refunds", values: [0, 0]),
            ])
        let svg = SVGChart(chart).figure()
        for label in [">0<", ">2,000<", ">4,000<", ">6,000<", ">8,000<"] { #expect(svg.contains(label), "\(label)") }
    }

    @Test("returning buyers are drawn in a colour of their own, not the refunds' red, light and dark")
    func returningBuyersColour() throws {
        let chart = RevenueMarkdown.buyersChart(
            [
                PeriodFigures(
                    period: ReportPeriod(
                        first: day("2025-03-01"), last: day("2025-03-01"), startsAt: Date(timeIntervalSince1970: 0),
                        endsAt: Date(timeIntervalSince1970: 86_400), startsAtUTC: "", endsAtUTC: ""))
            ],
            labels: ["03-01"])
        let svg = SVGChart(chart).figure()
        #expect(svg.contains("<rect class=\"s0\"") && svg.contains("<rect class=\"s2\""))
        #expect(!svg.contains("class=\"s1\"") && !svg.contains("swatch s1"))
        let css = ReportStyleSheet.css
        func colours(_ name: String) throws -> [String] {
            try css.matches(of: Regex("--\(name): (#[0-9a-f]{6})")).map { String($0.output[1].substring!) }
        }
        let (refunds, returning) = (try colours("s1"), try colours("s2"))
        #expect(refunds.count == 2 && returning.count == 2)  // light and dark
        #expect(Set(refunds).isDisjoint(with: returning))
        #expect(css.contains("svg .s2, .swatch.s2 { fill: var(--s2)"))
    }

    @Test("a month is YYYY-MM, from its first to its last day, February included")
    func months() {
        #expect(ReportMonth("2024-02").map { "\($0.first)…\($0.last)" } == "2024-02-01…2024-02-29")
        #expect(ReportMonth("2025-02").map { "\($0.first)…\($0.last)" } == "2025-02-01…2025-02-28")
        #expect(ReportMonth("2026-12").map { "\($0.first)…\($0.last) \($0)" } == "2026-12-01…2026-12-31 2026-12")
        for bad in ["2025-13", "2025-00", "2025-2", "25-02", "2025-02-01", "", "２０２５-02", "1969-12", "9001-01"] {
            #expect(ReportMonth(bad) == nil, "\(bad)")
        }
    }

    // MARK: A ledger worked out by hand

    /// Days in UTC; the report's day is 2025-06-10.
    /// - 06-10: ana buys a face for 2,500 KRW (KOR); cho's purchases of 06-09 (2,500 KRW, USA) and
    ///   06-08 (1,200 KRW, no storefront) are refunded: KRW purchases 1, refunds 2 → 200.0% of units,
    ///   3,700 of 2,500 → 148.0% of money, net −1,200 over one buyer.
    /// - 06-10: dan and eve pay 0.990 and 0.995 USD (USA): net 1.985 over two → 0.9925 → 0.992 (even).
    /// - 06-10: fay's JPY purchase of 06-05 (160 JPY, JPN) is refunded: no JPY purchases → "—".
    /// - KRW purchases of 1,000 on 05-12 (29 days before: in the 30), 05-11 (30 before: in the 90
    ///   only), 03-13 (89 before: in the 90) and 03-12 (90 before: in none).
    func fillLedger(_ ledger: LedgerStore) async throws {
        for uid in ["ana", "cho", "dan", "eve", "fay", "gus"] {
            _ = try await ledger.register(uid: uid, profile: testProfile)
        }
        let purchases: [(String, String, String, Int64, String, String?)] = [
            ("a1", "ana", "2025-06-10T10:00:00Z", 2_500_000, "KRW", "KOR"),
            ("c1", "cho", "2025-06-09T10:00:00Z", 2_500_000, "KRW", "USA"),
            ("c2", "cho", "2025-06-08T10:00:00Z", 1_200_000, "KRW", nil),
            ("d1", "dan", "2025-06-10T11:00:00Z", 990, "USD", "USA"),
            ("e1", "eve", "2025-06-10T12:00:00Z", 995, "USD", "USA"),
            ("f1", "fay", "2025-06-05T12:00:00Z", 160_000, "JPY", "JPN"),
            ("g1", "gus", "2025-05-12T00:00:00Z", 1_000_000, "KRW", "KOR"),
            ("g2", "gus", "2025-05-11T23:59:59Z", 1_000_000, "KRW", "KOR"),
            ("g3", "gus", "2025-03-13T00:00:00Z", 1_000_000, "KRW", "KOR"),
            ("g4", "gus", "2025-03-12T23:59:59Z", 1_000_000, "KRW", "KOR"),
        ]
        for (number, (id, uid, at, price, currency, storefront)) in purchases.enumerated() {
            let outcome = try await ledger.recordPurchase(
                transaction(
                    id, item: number % 2 == 0 ? .face(1) : .background(2), at: instant(at), price: price,
                    currency: currency, storefront: storefront), for: uid)
            guard case .recorded = outcome else { throw ReportError(.invalidInput, "\(id): \(outcome)") }
        }
        for (id, transaction, at) in [
            ("r1", "c1", "2025-06-10T13:00:00Z"), ("r2", "c2", "2025-06-10T14:00:00Z"),
            ("r3", "f1", "2025-06-10T15:00:00Z"),
        ] {
            _ = try await ledger.recordRefundEvent(refundEvent(id, .refund, for: transaction, at: instant(at)))
        }
    }

    @Test("the daily report's refund rates, ARPPU, storefronts and 7/30/90-day figures, worked out by hand")
    func handLedger() async throws {
        try await withReportLedger { db, ledger in
            try await fillLedger(ledger)
            let report = try await RevenueReporter(client: db.client).daily(date: day("2025-06-10"))
            #expect(report.reconciled)
            #expect(report.trend.count == 14 && report.operators.trailing.count == 90)
            #expect(report.operators.trailing.suffix(14) == report.trend[...])
            try await withTemporaryFolder { folder in
                let written = try writeAndRead(report, to: folder)
                let krw = try #require(written.row(["level": "currency", "currency": "KRW"]))
                #expect(krw["refund_rate_units_percent"] == "200.0" && krw["refund_rate_amount_percent"] == "148.0")
                #expect(krw["net_revenue"] == "-1200" && krw["buyers"] == "1" && krw["arppu"] == "-1200")
                let usd = try #require(written.row(["level": "currency", "currency": "USD"]))
                #expect(usd["refund_rate_units_percent"] == "0.0" && usd["refund_rate_amount_percent"] == "0.0")
                #expect(usd["arppu"] == "0.992" && usd["buyers"] == "2")
                let jpy = try #require(written.row(["level": "currency", "currency": "JPY"]))
                #expect(jpy["purchases"] == "0" && jpy["refunds"] == "1")
                #expect(jpy["refund_rate_units_percent"] == "" && jpy["refund_rate_amount_percent"] == "")
                #expect(jpy["arppu"] == "")

                // Storefronts: refunds in the storefront of the purchase they refund.
                let storefronts = written.rows(level: "storefront").map {
                    "\($0["currency"]!) \($0["storefront"]!) \($0["purchases"]!) \($0["gross"]!) \($0["refunds"]!) "
                        + "\($0["refunded_amount"]!) \($0["net_revenue"]!) \($0["refund_rate_units_percent"]!)"
                }
                #expect(
                    storefronts == [
                        "JPY JPN 0 0 1 160 -160 ", "KRW KOR 1 2500 0 0 2500 0.0", "KRW USA 0 0 1 2500 -2500 ",
                        "KRW unknown 0 0 1 1200 -1200 ", "USD USA 2 1.985 0 0.00 1.985 0.0",
                    ])

                // Trailing windows end on the day: 7 days hold a1, c1, c2; 30 add g1; 90 add g2, g3.
                func trailing(_ days: Int, _ currency: String = "KRW") -> String? {
                    written.row(["level": "trailing_\(days)_days", "currency": currency]).map {
                        "\($0["period_start"]!) \($0["period_end"]!) \($0["purchases"]!) \($0["gross"]!) "
                            + "\($0["refunds"]!) \($0["net_revenue"]!) \($0["buyers"]!)"
                    }
                }
                #expect(trailing(7) == "2025-06-04 2025-06-10 3 6200 2 2500 ")
                #expect(trailing(30) == "2025-05-12 2025-06-10 4 7200 2 3500 ")
                #expect(trailing(90) == "2025-03-13 2025-06-10 6 9200 2 5500 ")
                #expect(trailing(7, "JPY") == "2025-06-04 2025-06-10 1 160 1 0 ")

                let markdown = written.markdown
                for heading in [
                    "## Refund rate and revenue per paying user", "## Storefronts", "## 30- and 90-day figures",
                ] {
                    #expect(markdown.contains("\n\(heading)\n"), "missing \(heading)")
                }
                #expect(
                    markdown.contains(
                        try Regex(
                            #"\| production \| KRW +\| +1 \| +2 \| +200\.0% \| +2,500 \| +3,700 \| +148\.0% \| +0 \| +-1,200 \| +1 \| +-1,200 \|"#
                        )))
                #expect(markdown.contains(try Regex(#"\| production \| JPY +\| +0 \| +1 \| +— \| .* \| +0 \| +— \|"#)))
                #expect(markdown.contains(try Regex(#"\| production \| USD +\| .* \| +2 \| +0\.992 \|"#)))
                // KRW net per day: 7-day average 2,500 / 7 = 357.14 → 357; 90-day total 5,500.
                #expect(
                    markdown.contains(
                        try Regex(#"\| net revenue +\| +-1,200 \| +357 \| +117 \| +61 \| +3,500 \| +5,500 \|"#)))
                #expect(markdown.contains("| **Total**"))
            }
        }
    }

    // MARK: Month reports

    @Test("report month: the folder is the month, its first and last day included, in a 29-day February")
    func leapFebruary() async throws {
        try await withReportLedger { db, ledger in
            _ = try await ledger.register(uid: "ana", profile: testProfile)
            for (id, at) in [
                ("before", "2024-01-31T23:59:59Z"), ("first", "2024-02-01T00:00:00Z"),
                ("last", "2024-02-29T23:59:59Z"), ("after", "2024-03-01T00:00:00Z"),
            ] {
                _ = try await ledger.recordPurchase(
                    transaction(id, item: .face(1), at: instant(at), price: 2_500_000), for: "ana")
            }
            let report = try await RevenueReporter(client: db.client).month(ReportMonth("2024-02")!)
            #expect(report.folderName == "2024-02")
            #expect(report.periods.count == 29)
            #expect(report.periods.first?.period.first == day("2024-02-01"))
            #expect(report.periods.last?.period.last == day("2024-02-29"))
            #expect(report.whole.total(book: "production", currency: "KRW").purchases == 2)
            #expect(report.reconciled)
            try await withTemporaryFolder { folder in
                let paths = try ReportWriter(outputDirectory: folder).write(report, formats: ReportFormat.allCases)
                #expect(
                    paths.map { ($0 as NSString).deletingLastPathComponent }
                        == Array(repeating: folder + "/2024-02", count: 3))
                let markdown = RevenueMarkdown.render(report)
                #expect(markdown.hasPrefix("# Revenue report for 2024-02 (UTC)\n"))
                #expect(markdown.contains("Made by `shopledger report month 2024-02 --tz UTC --commission 0.30`."))
                #expect(RevenueHTML.render(report).contains("<title>Revenue report for 2024-02 (UTC)</title>"))
            }
            let february = try await RevenueReporter(client: db.client).month(ReportMonth("2025-02")!)
            #expect(february.periods.count == 28 && february.folderName == "2025-02")
        }
    }

    @Test("report month across a daylight saving change: 31 days, one of 23 hours, local midnights")
    func daylightSaving() async throws {
        try await withReportLedger { db, ledger in
            _ = try await ledger.register(uid: "ana", profile: testProfile)
            // Los Angeles: March 2025 runs 03-01 08:00 UTC (PST) to 04-01 07:00 UTC (PDT).
            for (id, at) in [
                ("before", "2025-03-01T07:59:59Z"), ("first", "2025-03-01T08:00:00Z"),
                ("last", "2025-04-01T06:59:59Z"), ("after", "2025-04-01T07:00:00Z"),
            ] {
                _ = try await ledger.recordPurchase(
                    transaction(id, item: .face(1), at: instant(at), price: 2_500_000), for: "ana")
            }
            let report = try await RevenueReporter(client: db.client).month(
                ReportMonth("2025-03")!, options: ReportOptions(timeZone: "America/Los_Angeles"))
            #expect(report.folderName == "2025-03")
            #expect(report.periods.count == 31)
            #expect(report.whole.period.startsAtUTC == "2025-03-01 08:00:00")
            #expect(report.whole.period.endsAtUTC == "2025-04-01 07:00:00")
            #expect(report.periods.filter { $0.period.seconds != 86_400 }.map(\.period.first) == [day("2025-03-09")])
            #expect(report.periods[8].period.seconds == 23 * 3600)
            let purchases = report.periods.map { $0.total(book: "production", currency: "KRW").purchases }
            #expect(purchases.first == 1 && purchases.last == 1 && purchases.reduce(0, +) == 2)
        }
    }

    @Test("a range report's storefronts add up per period and over the whole range, on a random ledger")
    func rangeStorefronts() async throws {
        try await withReportLedger { db, ledger in
            _ = try await RandomLedgerReportTests.recordRandomLedger(ledger, seed: 5)
            let report = try await RevenueReporter(client: db.client).range(
                from: day("2025-03-01"), through: day("2025-03-12"), by: .week)
            #expect(report.operators.storefronts.count == report.periods.count)
            for (figures, storefronts) in zip(report.periods, report.operators.storefronts) {
                for currency in figures.currencies(in: "production") {
                    var sum = RevenueFigures()
                    for (_, line) in storefronts.sortedLines(currency: currency) { try sum.addAmounts(of: line) }
                    var total = figures.total(book: "production", currency: currency)
                    total.buyers = 0
                    total.firstTimeBuyers = 0
                    #expect(sum == total, "\(figures.period.label) \(currency)")
                }
                #expect(Set(storefronts.currencies) == Set(figures.currencies(in: "production")))
            }
            for currency in report.whole.currencies(in: "production") {
                var sum = RevenueFigures()
                for (_, line) in report.operators.wholeStorefronts.sortedLines(currency: currency) {
                    try sum.addAmounts(of: line)
                }
                var total = report.whole.total(book: "production", currency: currency)
                total.buyers = 0
                total.firstTimeBuyers = 0
                #expect(sum == total, "whole \(currency)")
            }
            #expect(report.operators.wholeStorefronts.lines.keys.contains { $0.storefront == nil })
        }
    }
}
