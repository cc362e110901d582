import CivilDates
import Foundation
import Ledger
import Receipts
import Reports
import TestSupport
import Testing

/// A random ledger (several currencies, refunds days later, reversals, family sharing, test
/// traffic), recorded through `LedgerStore`; every daily report over it, in two time zones, is
/// compared with figures computed here from the generated events.
@Suite("Daily reports match figures computed from the generated purchases")
struct RandomLedgerReportTests {
    static let prices: [String: (Int64, Int64)] = [
        "KRW": (1_200_000, 2_500_000), "USD": (990, 1_990), "JPY": (160_000, 300_000),
    ]

    /// Records a seeded random ledger over 2025-03-03 … 2025-03-07 (UTC) and returns its events.
    static func recordRandomLedger(_ ledger: LedgerStore, seed: UInt64) async throws -> TestLedgerEvents {
        var random = SeededGenerator(seed: seed)
        var events = TestLedgerEvents()
        let users = (0..<25).map { "user\($0)" }
        for uid in users { _ = try await ledger.register(uid: uid, profile: testProfile) }
        let start = instant("2025-03-03T00:00:00Z").timeIntervalSince1970
        let items = (1...4).map(ItemID.face) + (1...7).map(ItemID.background)
        for number in 0..<140 {
            let at = Date(timeIntervalSince1970: start + Double(Int.random(in: 0..<(5 * 86_400), using: &random)))
            let item = items.randomElement(using: &random)!
            let uid = users.randomElement(using: &random)!
            let bookRoll = Int.random(in: 0..<100, using: &random)
            let environment: StoreEnvironment = bookRoll < 85 ? .production : .sandbox
            let store: VerifiedTransaction.Store = bookRoll >= 93 ? .stub : .appStore
            let production = store == .appStore && environment == .production
            let bought = !(production && Int.random(in: 0..<100, using: &random) < 6)
            let currency = ["KRW", "KRW", "KRW", "USD", "JPY"].randomElement(using: &random)!
            let cheap = item == .face(1) || (item.kind == .background && item.index <= 3)
            let price: Int64? =
                Int.random(in: 0..<100, using: &random) < 4 ? nil : (cheap ? prices[currency]!.0 : prices[currency]!.1)
            let id = "t\(number)"
            // Storefronts by number (no draw from the generator, so the seeds' ledgers stay as they were).
            let storefront = ["KOR", "USA", "JPN", nil][number % 4]
            let outcome = try await ledger.recordPurchase(
                transaction(
                    id, item: item, at: at, price: price, currency: currency, store: store,
                    environment: store == .stub ? .stub : environment, ownership: bought ? .purchased : .familyShared,
                    storefront: storefront),
                for: uid)
            guard case .recorded = outcome else {
                throw ReportError(.invalidInput, "purchase \(id) was not recorded: \(outcome)")
            }
            events.sales.append(
                .init(
                    transactionId: id, uid: uid, item: item, production: production, bought: bought, priceMilli: price,
                    currency: price == nil ? nil : currency, at: at, storefront: storefront))
            // Refunds (of bought purchases in any book), some reversed later.
            if bought, Int.random(in: 0..<100, using: &random) < 25 {
                let refundAt = at.addingTimeInterval(Double(Int.random(in: 3_600..<(3 * 86_400), using: &random)))
                _ = try await ledger.recordRefundEvent(
                    refundEvent(
                        "r\(number)", .refund, for: id, at: refundAt, store: store,
                        environment: store == .stub ? .stub : environment))
                events.refunds.append(.init(transactionId: id, at: refundAt, reversal: false))
                if Int.random(in: 0..<100, using: &random) < 30 {
                    let reversalAt = refundAt.addingTimeInterval(
                        Double(Int.random(in: 3_600..<(2 * 86_400), using: &random)))
                    _ = try await ledger.recordRefundEvent(
                        refundEvent(
                            "v\(number)", .refundReversal, for: id, at: reversalAt, store: store,
                            environment: store == .stub ? .stub : environment))
                    events.refunds.append(.init(transactionId: id, at: reversalAt, reversal: true))
                }
            }
        }
        return events
    }

    /// The trailing 7/30/90-day rows equal the model's currency totals summed over the days ending
    /// on `date` (the 7-day windows cut through the ledger's days, so their edges count).
    static func checkTrailing(_ written: WrittenReport, events: TestLedgerEvents, date: CalendarDate, zone: String) {
        var byDay: [CalendarDate: [TestLedgerEvents.Key: TestLedgerEvents.Figures]] = [:]
        for offset in 0..<RevenueReporter.historyDays {
            let day = date.adding(days: -offset)
            byDay[day] = events.expected(day: "\(day)", zone: zone)
        }
        for days in RevenueReporter.trailingWindows {
            var expected: [String: TestLedgerEvents.Figures] = [:]
            for offset in 0..<days {
                for (key, figures) in byDay[date.adding(days: -offset)]! where key.kind == nil {
                    var sum = expected[key.currency] ?? TestLedgerEvents.Figures()
                    sum.purchases += figures.purchases
                    sum.gross += figures.gross
                    sum.refunds += figures.refunds
                    sum.refunded += figures.refunded
                    sum.reversals += figures.reversals
                    sum.reversed += figures.reversed
                    sum.commission += figures.commission
                    expected[key.currency] = sum
                }
            }
            var seen: [String: TestLedgerEvents.Figures] = [:]
            for row in written.rows(level: "trailing_\(days)_days") {
                #expect(row["period_start"] == "\(date.adding(days: 1 - days))" && row["period_end"] == "\(date)")
                #expect(row["buyers"] == "" && row["first_time_buyers"] == "")
                seen[row["currency"]!] = TestLedgerEvents.Figures(
                    purchases: Int(row["purchases"]!)!, gross: milli(row["gross"])!, refunds: Int(row["refunds"]!)!,
                    refunded: milli(row["refunded_amount"])!, reversals: Int(row["refund_reversals"]!)!,
                    reversed: milli(row["reversed_amount"])!, commission: milli(row["estimated_commission"])!)
            }
            #expect(seen == expected, "\(date) \(zone) \(days) days")
        }
    }

    /// The storefront rows equal the model's per storefront, and each currency's add up to its
    /// currency row in every summed column.
    static func checkStorefronts(_ written: WrittenReport, events: TestLedgerEvents, day: String, zone: String) throws {
        var seen: [String: TestLedgerEvents.Figures] = [:]
        let columns = [
            "purchases", "gross", "refunds", "refunded_amount", "refund_reversals", "reversed_amount", "net_revenue",
            "estimated_commission", "estimated_proceeds",
        ]
        var sums: [String: [Int64]] = [:]
        for row in written.rows(level: "storefront") {
            #expect(row["period_start"] == day && row["buyers"] == "" && row["arppu"] == "")
            let storefront = try #require(row["storefront"])
            #expect(["KOR", "USA", "JPN", "unknown"].contains(storefront))
            seen["\(row["currency"]!) \(storefront)"] = TestLedgerEvents.Figures(
                purchases: Int(row["purchases"]!)!, gross: milli(row["gross"])!, refunds: Int(row["refunds"]!)!,
                refunded: milli(row["refunded_amount"])!, reversals: Int(row["refund_reversals"]!)!,
                reversed: milli(row["reversed_amount"])!)
            let values = columns.map { milli(row[$0]) ?? Int64(row[$0]!)! * 1000 }
            sums[row["currency"]!] = zip(sums[row["currency"]!] ?? Array(repeating: 0, count: columns.count), values)
                .map { $0 + $1 }
        }
        #expect(seen == events.expectedStorefronts(day: day, zone: zone), "\(day) \(zone)")
        let totals = written.rows(level: "currency")
        #expect(Set(totals.map { $0["currency"]! }) == Set(sums.keys), "\(day) \(zone)")
        for row in totals {
            #expect(sums[row["currency"]!] == columns.map { milli(row[$0]) ?? 0 }, "\(day) \(zone) \(row["currency"]!)")
        }
    }

    /// The rows per store (levels `store_item`, `store_kind`, `store_currency`) of every book add up,
    /// in every summed column, to the all-store row of the same book, currency and item; a book sold
    /// by one store only (every book of this ledger: production and sandbox the App Store's, stub the
    /// stub store's) has that store's buyers equal to the book's.
    static func checkStores(_ written: WrittenReport, day: String, zone: String) {
        let columns = [
            "purchases", "gross", "refunds", "refunded_amount", "refund_reversals", "reversed_amount", "net_revenue",
            "estimated_commission", "estimated_proceeds",
        ]
        func key(_ row: [String: String], level: String) -> String {
            [row["book"]!, level, row["currency"]!, row["item_kind"]!, row["item_index"]!].joined(separator: " ")
        }
        var sums: [String: [Int64]] = [:]
        var stores: [String: Set<String>] = [:]
        var storeRows: [String: [String: String]] = [:]
        for row in written.rows where row["level"]!.hasPrefix("store_") {
            let level = String(row["level"]!.dropFirst("store_".count))
            let line = key(row, level: level)
            #expect(["app_store", "stub"].contains(row["store"]!), "\(row)")
            sums[line] = zip(sums[line] ?? Array(repeating: 0, count: columns.count), columns.map { milli(row[$0])! })
                .map { $0 + $1 }
            stores[row["book"]!, default: []].insert(row["store"]!)
            storeRows[line] = row
        }
        let all = written.rows.filter { ["item", "kind", "currency"].contains($0["level"]!) && $0["currency"] != "" }
        #expect(Set(all.map { key($0, level: $0["level"]!) }) == Set(sums.keys), "\(day) \(zone)")
        for row in all {
            let line = key(row, level: row["level"]!)
            #expect(row["store"] == "")
            #expect(sums[line] == columns.map { milli(row[$0])! }, "\(day) \(zone) \(line)")
            if stores[row["book"]!]?.count == 1, let store = storeRows[line] {
                #expect(
                    [store["buyers"], store["first_time_buyers"], store["arppu"]]
                        == [row["buyers"], row["first_time_buyers"], row["arppu"]], "\(day) \(zone) \(line)")
            }
        }
    }

    @Test(
        "every day's CSV rows, in UTC and Asia/Seoul, equal the independently computed figures",
        arguments: ["UTC", "Asia/Seoul"])
    func everyDayMatches(zone: String) async throws {
        try await withReportLedger { db, ledger in
            let events = try await Self.recordRandomLedger(ledger, seed: 42)
            let reporter = RevenueReporter(client: db.client)
            try await withTemporaryFolder { folder in
                var daysWithActivity = 0
                for date in (2...9).map({ day("2025-03-0\($0)") }) {
                    let report = try await reporter.daily(date: date, options: ReportOptions(timeZone: zone))
                    let written = try writeAndRead(report, to: folder)
                    let expected = events.expected(day: "\(date)", zone: zone)
                    if !expected.isEmpty { daysWithActivity += 1 }
                    var seen = Set<TestLedgerEvents.Key>()
                    for row in written.rows
                    where row["book"] == "production" && row["currency"] != ""
                        && ["item", "kind", "currency"].contains(row["level"])
                    {
                        let key = TestLedgerEvents.Key(
                            currency: row["currency"]!, kind: ItemKind(rawValue: row["item_kind"]!),
                            index: Int(row["item_index"]!))
                        seen.insert(key)
                        #expect(
                            row["period_start"] == "\(date)" && row["period_end"] == "\(date)"
                                && row["time_zone"] == zone)
                        #expect(TestLedgerEvents.Figures(csv: row) == expected[key], "\(date) \(zone) \(key)")
                        let figures = TestLedgerEvents.Figures(csv: row)
                        #expect(milli(row["net_revenue"]) == figures.net)
                        #expect(milli(row["estimated_proceeds"]) == figures.proceeds)
                    }
                    #expect(
                        seen == Set(expected.keys),
                        "\(date) \(zone): rows for \(seen.subtracting(expected.keys)), missing \(Set(expected.keys).subtracting(seen))"
                    )
                    // The Markdown headline shows the same KRW gross and net.
                    if let krw = expected[.init(currency: "KRW", kind: nil, index: nil)] {
                        let markdown = written.markdown
                        let gross = CurrencyFormat.amount(krw.gross, currency: "KRW", grouping: true)
                        let net = CurrencyFormat.amount(krw.net, currency: "KRW", grouping: true)
                        #expect(
                            markdown.contains(try Regex("\\| gross +\\| +\(gross) \\|")),
                            "\(date) \(zone) gross \(gross)")
                        #expect(
                            markdown.contains(try Regex("\\| net revenue +\\| +\(net) \\|")),
                            "\(date) \(zone) net \(net)")
                    }
                    #expect(report.reconciled)
                    try Self.checkStorefronts(written, events: events, day: "\(date)", zone: zone)
                    Self.checkStores(written, day: "\(date)", zone: zone)
                    Self.checkTrailing(written, events: events, date: date, zone: zone)
                }
                #expect(daysWithActivity >= 5)
            }
        }
    }
}
