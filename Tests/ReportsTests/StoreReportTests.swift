import Foundation
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Reports

/// Reports split by store (issue 43): every revenue figure per App Store and Google Play beside the
/// all-store totals, in the CSV, the Markdown, the HTML and the report day cache.
@Suite("Reports: by store")
struct StoreReportTests {
    static let date = day("2025-08-01")

    /// On 2025-08-01 (UTC): ana buys face 1 on the App Store for 2,500 KRW; ben buys face 2 on Google
    /// Play for 3,300 KRW, and Google refunds it the same day; cho buys face 2 on Google Play, recorded
    /// unpriced (as Play purchases are until their price is learned).
    static func fillLedger(_ db: TestDatabase, _ ledger: LedgerStore) async throws {
        try await CatalogStore(client: db.client).setGoogleProductId(
            .face(2), "sprout2", SupportRequest(actor: "ops", reason: "sold on Google Play"))
        for uid in ["ana", "ben", "cho"] { _ = try await ledger.register(uid: uid, profile: testProfile) }
        let apple = try await ledger.recordPurchase(
            transaction("apple-1", item: .face(1), at: instant("2025-08-01T03:00:00Z"), price: 2_500_000), for: "ana")
        var play = transaction("GPA.1", item: .face(2), at: instant("2025-08-01T04:00:00Z"), price: 3_300_000)
        play.store = .googlePlay
        play.productId = "sprout2"
        let google = try await ledger.recordPurchase(play, for: "ben")
        var unpriced = transaction("GPA.2", item: .face(2), at: instant("2025-08-01T05:00:00Z"), price: nil)
        unpriced.store = .googlePlay
        unpriced.productId = "sprout2"
        let grant = try await ledger.recordPurchase(unpriced, for: "cho")
        for outcome in [apple, google, grant] {
            guard case .recorded = outcome else {
                Issue.record("not recorded: \(outcome)")
                return
            }
        }
        // What the Play desk keeps of a purchase: its token, and Google's acknowledgement.
        for purchase in [play, unpriced] {
            let token = "token-" + purchase.transactionId
            try await ledger.recordGooglePlayToken(
                GooglePlayToken(
                    purchaseToken: token, packageName: "com.memolease.sesac1", environment: .production,
                    transactionId: purchase.transactionId, orderId: purchase.transactionId, productId: "sprout2",
                    consumable: false, purchaseDate: purchase.purchaseDate))
            try await ledger.recordGooglePlayAcknowledgement(purchaseToken: token, consumed: false)
        }
        _ = try await ledger.recordRefundEvent(
            refundEvent("void-1", .refund, for: "GPA.1", at: instant("2025-08-01T09:00:00Z"), store: .googlePlay))
    }

    /// The cells of the Markdown table row starting with `label` in the section headed `heading`.
    static func markdownRow(_ markdown: String, section heading: String, label: String) -> [String]? {
        guard let start = markdown.range(of: "\n\(heading)\n") else { return nil }
        let section = markdown[start.upperBound...]
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        for line in section[..<end].split(separator: "\n") where line.hasPrefix("| ") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            if cells.first == label { return cells }
        }
        return nil
    }

    /// The cells of the HTML table row whose first cell is `label`, after `heading` (an `<h2>`).
    static func htmlRow(_ html: String, after heading: String, label: String) -> [String]? {
        guard let start = html.range(of: heading),
            let row = html.range(of: "<tr><td>\(label)</td>", range: start.upperBound..<html.endIndex),
            let end = html.range(of: "</tr>", range: row.lowerBound..<html.endIndex)
        else { return nil }
        let text = String(html[row.lowerBound..<end.lowerBound])
        let cell = try! NSRegularExpression(pattern: "<td[^>]*>(.*?)</td>")
        return cell.matches(in: text, range: NSRange(text.startIndex..., in: text)).map {
            HTMLFigures.unescape(String(text[Range($0.range(at: 1), in: text)!]))
        }
    }

    @Test("one App Store and one refunded Google Play purchase: each store's figures in CSV, Markdown and HTML")
    func dayByStore() async throws {
        try await withReportLedger { db, ledger in
            try await Self.fillLedger(db, ledger)
            let report = try await RevenueReporter(client: db.client).daily(date: Self.date)
            #expect(report.reconciled)
            try await withTemporaryFolder { folder in
                let (csv, html) = try HTMLReportTests.writeAll(report, to: folder)

                // The all-store rows are as they were: both purchases, the refund, both buyers.
                let all = try #require(csv.row(["level": "currency", "book": "production", "currency": "KRW"]))
                #expect(all["store"] == "")
                #expect(
                    [all["purchases"], all["gross"], all["refunds"], all["refunded_amount"], all["net_revenue"]]
                        == ["2", "5800", "1", "3300", "2500"])
                #expect(all["buyers"] == "2" && all["first_time_buyers"] == "2")
                let allFaces = try #require(csv.row(["level": "kind", "book": "production", "item_kind": "face"]))
                #expect(allFaces["purchases"] == "2" && allFaces["net_revenue"] == "2500")
                #expect(csv.rows(level: "item").count == 2)

                // Per store: the App Store's sale, Google Play's sale and refund.
                let apple = try #require(csv.row(["level": "store_currency", "store": "app_store"]))
                #expect(
                    [
                        apple["purchases"], apple["gross"], apple["refunds"], apple["refunded_amount"],
                        apple["net_revenue"],
                    ]
                        == ["1", "2500", "0", "0", "2500"])
                #expect(apple["buyers"] == "1" && apple["estimated_proceeds"] == "1750")
                let google = try #require(csv.row(["level": "store_currency", "store": "google_play"]))
                #expect(
                    [
                        google["purchases"], google["gross"], google["refunds"], google["refunded_amount"],
                        google["net_revenue"],
                    ] == ["1", "3300", "1", "3300", "0"])
                #expect(google["buyers"] == "1" && google["refund_rate_units_percent"] == "100.0")
                let playItem = try #require(
                    csv.row(["level": "store_item", "store": "google_play", "item_kind": "face", "item_index": "2"]))
                #expect(playItem["product_id"] == "com.memolease.sesac1.sprout2" && playItem["refunds"] == "1")
                #expect(csv.row(["level": "store_item", "store": "google_play", "item_index": "1"]) == nil)
                #expect(csv.row(["level": "store_item", "store": "app_store", "item_index": "1"])?["gross"] == "2500")
                // The stores add up to the all-store row, column by column (buyers are counted, not summed).
                for column in ["purchases", "gross", "refunds", "refunded_amount", "net_revenue", "estimated_proceeds"]
                {
                    #expect(milli(apple[column])! + milli(google[column])! == milli(all[column])!, "\(column)")
                }

                // Markdown: the "By store" section, and the totals elsewhere unchanged.
                let markdown = csv.markdown
                #expect(
                    Self.markdownRow(markdown, section: "## By store", label: "App Store")
                        == ["App Store", "1", "2,500", "0", "0", "0", "2,500", "750", "1,750", "1", "1"])
                #expect(
                    Self.markdownRow(markdown, section: "## By store", label: "Google Play")
                        == ["Google Play", "1", "3,300", "1", "3,300", "0", "0", "0", "0", "1", "1"])
                #expect(
                    Self.markdownRow(markdown, section: "## By store", label: "**All stores**")
                        == ["**All stores**", "2", "5,800", "1", "3,300", "0", "2,500", "750", "1,750", "2", "2"])
                #expect(
                    markdown.contains(
                        "Production purchases recorded without a price in this day, per store (grants, not revenue, "
                            + "until their price is learned; Google Play's purchases are recorded so): Google Play 1."))
                let faces = try #require(Self.markdownRow(markdown, section: "## Faces", label: "**All faces**"))
                #expect(Array(faces.dropFirst(2).prefix(4)) == ["KRW", "2", "5,800", "1"])

                // HTML: the same section, and the stores' rows among every figure.
                #expect(
                    Self.htmlRow(html, after: "<h2>By store</h2>", label: "Google Play")
                        == ["Google Play", "1", "3,300", "1", "3,300", "0", "0", "0", "0", "1", "1"])
                #expect(
                    Self.htmlRow(html, after: "<h2>By store</h2>", label: "App Store")
                        == ["App Store", "1", "2,500", "0", "0", "0", "2,500", "750", "1,750", "1", "1"])
                #expect(try HTMLFigures.rows(in: html) == csv.rows)
                #expect(html.contains("Google Play&#39;s purchases are recorded so): Google Play 1.</p>"))
                // The grant is still listed with the other grants, over all stores.
                let grant = try #require(csv.row(["level": "item", "currency": "", "item_index": "2"]))
                #expect(grant["unpriced_purchases"] == "1" && grant["store"] == "")
            }
        }
    }

    @Test("a Play purchase priced later (Google's order) is Google Play's revenue on the day its price was learned")
    func playPriceLearned() async throws {
        try await withReportLedger { db, ledger in
            try await Self.fillLedger(db, ledger)
            // What GooglePlayPricer books from the Orders API: the charge, as a learned price of cho's purchase.
            var priced = transaction("GPA.2", item: .face(2), at: instant("2025-08-01T05:00:00Z"), price: 3_300_000)
            priced.store = .googlePlay
            priced.productId = "sprout2"
            priced.signedDate = instant("2025-08-02T10:00:00Z")
            priced.evidenceSHA256 = fakeDigest("google_play_order/GPA.2")
            guard case .recorded = try await ledger.recordLearnedPrice(priced) else {
                Issue.record("the price was not booked")
                return
            }
            let report = try await RevenueReporter(client: db.client).daily(date: day("2025-08-02"))
            #expect(report.reconciled)
            try await withTemporaryFolder { folder in
                let written = try writeAndRead(report, to: folder)
                let google = try #require(written.row(["level": "store_currency", "store": "google_play"]))
                #expect([google["purchases"], google["gross"], google["net_revenue"]] == ["1", "3300", "3300"])
                #expect(written.row(["level": "store_currency", "store": "app_store"]) == nil)
                let all = try #require(written.row(["level": "currency", "book": "production"]))
                #expect([all["purchases"], all["gross"], all["net_revenue"]] == ["1", "3300", "3300"])
                #expect(
                    Self.markdownRow(written.markdown, section: "## By store", label: "Google Play").map {
                        Array($0.prefix(7))
                    }
                        == ["Google Play", "1", "3,300", "0", "0", "0", "3,300"])
            }
        }
    }

    @Test("a range report and --json-shaped figures split by store over the whole range")
    func rangeByStore() async throws {
        try await withReportLedger { db, ledger in
            try await Self.fillLedger(db, ledger)
            let report = try await RevenueReporter(client: db.client).range(
                from: day("2025-07-28"), through: day("2025-08-03"), by: .day)
            #expect(report.whole.stores(in: "production") == ["app_store", "google_play"])
            #expect(report.whole.total(book: "production", currency: "KRW", store: "google_play").netMilli == 0)
            #expect(report.whole.total(book: "production", currency: "KRW", store: "app_store").netMilli == 2_500_000)
            #expect(report.whole.total(book: "production", currency: "KRW").netMilli == 2_500_000)
            let markdown = RevenueMarkdown.render(report)
            #expect(
                Self.markdownRow(markdown, section: "## By store", label: "Google Play")
                    == ["Google Play", "1", "3,300", "1", "3,300", "0", "0", "0", "0", "1", "1"])
            let rows = RevenueCSV.records(report).map { Dictionary(uniqueKeysWithValues: zip(RevenueCSV.columns, $0)) }
            let googleDays = rows.filter {
                $0["level"]?.value == "store_currency" && $0["store"]?.value == "google_play"
            }
            #expect(googleDays.map { $0["period_start"]?.value } == ["2025-08-01"])
        }
    }

    @Test("the report day cache keeps each store's rows: a cached day reads back the same per store")
    func cachedByStore() async throws {
        try await withReportLedger { db, ledger in
            try await Self.fillLedger(db, ledger)
            // Everything folded in, the watermark past every entry: the report fills its days.
            try await FirstPurchaseCatchUp(client: db.client, invalidating: .reportDays).run()
            try await db.client.query(
                """
                UPDATE first_purchases_watermark
                SET caught_up_to = clock_timestamp() + \(unsafeSQL: FirstPurchaseSQL.overlap)
                """)
            let computed = try await RevenueReporter(client: db.client).daily(date: Self.date)
            let stored = try await db.client.query(
                "SELECT store, level, buyers FROM report_day_store_buyers WHERE day = '2025-08-01' ORDER BY 1, 2"
            ).map { try $0.decode((String, Int, Int).self) }
            #expect(
                stored.map(\.0) == ["app_store", "app_store", "app_store", "google_play", "google_play", "google_play"])
            let entryStores = try await db.client.query(
                "SELECT DISTINCT store FROM report_day_entries WHERE day = '2025-08-01' ORDER BY 1"
            ).map { try $0.decode(String?.self, at: 0) }
            #expect(entryStores == ["app_store", "google_play"])
            // Read back from the cache: the same figures and files.
            let cached = try await FirstPurchaseCatchUpTests.reportWithoutCatchUp(db) {
                try await RevenueReporter(client: db.client).daily(date: Self.date)
            }
            #expect(cached.whole == computed.whole)
            #expect(
                ReportFormat.allCases.map { $0.render(cached) } == ReportFormat.allCases.map { $0.render(computed) })
            // A cached store row that is wrong shows in the report, and reconcile names the day.
            try await db.client.query(
                "UPDATE report_day_store_buyers SET buyers = 5 WHERE day = '2025-08-01' AND store = 'google_play' AND level = 3"
            )
            let wrong = try await FirstPurchaseCatchUpTests.reportWithoutCatchUp(db) {
                try await RevenueReporter(client: db.client).daily(date: Self.date)
            }
            #expect(wrong.whole.total(book: "production", currency: "KRW", store: "google_play").buyers == 5)
            let failures = try await db.client.withTransaction(.init(isolation: .repeatableRead, readOnly: true)) {
                try await ReportDayCacheCheck().run(on: $0, failureLimit: 50)
            }.failures.map(\.id)
            #expect(failures == ["UTC 2025-08-01"])
            // A day an older build filled (no rows per store) is not read, and is filled again.
            try await db.client.query(
                "UPDATE report_days SET by_store = false WHERE day = '2025-08-01'")
            let older = try await FirstPurchaseCatchUpTests.reportWithoutCatchUp(db) {
                try await RevenueReporter(client: db.client).daily(date: Self.date)
            }
            #expect(older.whole == computed.whole)
            _ = try await RevenueReporter(client: db.client).daily(date: Self.date)
            let refilled = try await db.client.query(
                "SELECT by_store FROM report_days WHERE time_zone = 'UTC' AND day = '2025-08-01'"
            ).single().decode(Bool.self, at: 0)
            #expect(refilled)
            #expect(
                try await db.client.query(
                    "SELECT buyers FROM report_day_store_buyers WHERE day = '2025-08-01' AND store = 'google_play' AND level = 3"
                ).single().decode(Int.self, at: 0) == 1)
        }
    }

    @Test("report_totals_match_ledger fails when a store's receivable disagrees with its revenue in the report")
    func receivablePerStore() async throws {
        try await TestGate.reports.run {
            try await withTestDatabase { db in
                let ledger = LedgerStore(client: db.client)
                try await Self.fillLedger(db, ledger)
                #expect(try await Reconciler(client: db.client, checks: [ReportTotalsCheck()]).run().passed)
                // Balanced postings moving 1 KRW of the App Store's receivable to Google Play's: revenue and
                // refunds stay right, so only the split by store can notice.
                try await db.client.withConnection { connection in
                    try await connection.query("SET session_replication_role = replica")
                    try await connection.query(
                        """
                        INSERT INTO posting_rows (transaction_id, entry_id, leg, account, currency, amount_milli)
                        SELECT transaction_id, entry_id, v.leg, v.account, 'KRW', v.amount
                        FROM journal_entries,
                             (VALUES (3, 'receivable:google_play', 1000::bigint), (4, 'receivable:app_store', -1000::bigint))
                             v (leg, account, amount)
                        WHERE transaction_id = 'apple-1'
                        """)
                    try await connection.query("RESET session_replication_role")
                }
                let check = try await Reconciler(client: db.client, checks: [ReportTotalsCheck()]).run().checks[0]
                #expect(check.failures.map(\.id) == ["receivable:app_store KRW", "receivable:google_play KRW"])
            }
        }
    }

    @Test("the check's split: stores whose figures do not add up to the line's are named")
    func splitMustAddUp() throws {
        let group = { (store: String, count: Int) in
            EntryGroup(
                period: 1, entryKind: .purchase, book: "production", store: store, currency: "KRW",
                item: ItemID(kind: .face, index: 1), ownership: .purchased, priceMilli: 2_500_000, count: count)
        }
        var accumulation = try #require(
            try RevenueAggregator(commission: .standard).accumulate([group("app_store", 1), group("google_play", 2)])[1]
        )
        #expect(accumulation.lines[RevenueLineKey(book: "production", currency: "KRW")]?.purchases == 3)
        #expect(ReportTotalsCheck.storeSplitFailures(accumulation, period: 1).isEmpty)
        accumulation.storeLines["google_play"]?[RevenueLineKey(book: "production", currency: "KRW", kind: .face)]?
            .purchases = 1
        #expect(
            ReportTotalsCheck.storeSplitFailures(accumulation, period: 1).map(\.id) == ["period 1 production KRW face"])
    }
}
