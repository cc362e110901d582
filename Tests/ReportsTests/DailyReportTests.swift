import Foundation
import Ledger
import Postgres
import Receipts
import Reports
import TestSupport
import Testing

@Suite("Daily report")
struct DailyReportTests {
    @Test("a purchase at 23:30 UTC is that day in UTC and the next day in Asia/Seoul")
    func seoulBoundary() async throws {
        try await withReportLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(
                transaction("late", item: .face(2), at: instant("2025-03-09T23:30:00Z"), price: 2_500_000), for: "alice"
            )
            let reporter = RevenueReporter(client: db.client)
            try await withTemporaryFolder { folder in
                let utc = try writeAndRead(try await reporter.daily(date: day("2025-03-09")), to: folder + "/utc")
                #expect(utc.row(["level": "item", "item_kind": "face", "item_index": "2"])?["purchases"] == "1")
                let seoul = ReportOptions(timeZone: "Asia/Seoul")
                let before = try writeAndRead(
                    try await reporter.daily(date: day("2025-03-09"), options: seoul), to: folder + "/seoul")
                #expect(before.rows.isEmpty)
                let report = try await reporter.daily(date: day("2025-03-10"), options: seoul)
                #expect(report.whole.period.startsAtUTC == "2025-03-09 15:00:00")
                #expect(report.whole.period.endsAtUTC == "2025-03-10 15:00:00")
                let after = try writeAndRead(report, to: folder + "/seoul")
                let row = try #require(after.row(["level": "item", "item_kind": "face", "item_index": "2"]))
                #expect(row["purchases"] == "1" && row["gross"] == "2500" && row["item_name"] == "민트 새싹")
                #expect(row["product_id"] == "com.memolease.sesac1.sprout2")
                #expect(after.markdown.contains("# Revenue report for 2025-03-10 (Asia/Seoul)"))
                #expect(after.markdown.contains("from 2025-03-09 15:00:00 UTC to 2025-03-10 15:00:00 UTC (24 hours)"))
            }
        }
    }

    @Test(
        "America/Los_Angeles: the spring-forward day has 23 hours and the fall-back day 25, each counting its own purchases"
    )
    func losAngelesDaylightSaving() async throws {
        try await withReportLedger { db, ledger in
            _ = try await ledger.register(uid: "bob", profile: testProfile)
            let purchases = [
                ("a", "2025-03-09T07:30:00Z"),  // 2025-03-08 23:30 PST
                ("b", "2025-03-10T06:30:00Z"),  // 2025-03-09 23:30 PDT: the last hour of a 23-hour day
                ("c", "2025-03-10T07:30:00Z"),  // 2025-03-10 00:30 PDT
                ("d", "2025-11-02T06:30:00Z"),  // 2025-11-01 23:30 PDT
                ("e", "2025-11-02T07:30:00Z"),  // 2025-11-02 00:30 PDT
                ("f", "2025-11-03T07:30:00Z"),  // 2025-11-02 23:30 PST: the 25th hour
                ("g", "2025-11-03T08:30:00Z"),  // 2025-11-03 00:30 PST
            ]
            for (id, at) in purchases {
                _ = try await ledger.recordPurchase(
                    transaction(id, item: .background(1), at: instant(at), price: 1_200_000), for: "bob")
            }
            let reporter = RevenueReporter(client: db.client)
            let zone = ReportOptions(timeZone: "America/Los_Angeles")
            let spring = try await reporter.daily(date: day("2025-03-09"), options: zone)
            #expect(spring.whole.period.startsAtUTC == "2025-03-09 08:00:00")
            #expect(spring.whole.period.endsAtUTC == "2025-03-10 07:00:00")
            #expect(spring.whole.period.seconds == 23 * 3600)
            #expect(spring.whole.total(book: "production", currency: "KRW").purchases == 1)
            let fall = try await reporter.daily(date: day("2025-11-02"), options: zone)
            #expect(fall.whole.period.startsAtUTC == "2025-11-02 07:00:00")
            #expect(fall.whole.period.endsAtUTC == "2025-11-03 08:00:00")
            #expect(fall.whole.period.seconds == 25 * 3600)
            #expect(fall.whole.total(book: "production", currency: "KRW").purchases == 2)
            try await withTemporaryFolder { folder in
                let written = try writeAndRead(fall, to: folder)
                #expect(written.markdown.contains("from 2025-11-02 07:00:00 UTC to 2025-11-03 08:00:00 UTC (25 hours)"))
                #expect(written.row(["level": "currency", "currency": "KRW"])?["purchases"] == "2")
                let springText = RevenueMarkdown.render(spring)
                #expect(springText.contains("(23 hours)"))
                // The trend shows the day before (2025-03-08) with purchase a.
                #expect(spring.trend[12].total(book: "production", currency: "KRW").purchases == 1)
            }
        }
    }

    @Test("several currencies, each in its own precision, with commission rounded per unit to the minor unit")
    func currencies() async throws {
        try await withReportLedger { db, ledger in
            _ = try await ledger.register(uid: "carol", profile: testProfile)
            let at = instant("2025-04-01T12:00:00Z")
            _ = try await ledger.recordPurchase(
                transaction("k", item: .face(2), at: at, price: 2_500_000, currency: "KRW"), for: "carol")
            _ = try await ledger.recordPurchase(
                transaction("u1", item: .face(1), at: at, price: 990, currency: "USD"), for: "carol")
            _ = try await ledger.recordPurchase(
                transaction("u2", item: .face(1), at: at, price: 990, currency: "USD"), for: "carol")
            _ = try await ledger.recordPurchase(
                transaction("j", item: .background(7), at: at, price: 300_000, currency: "JPY"), for: "carol")
            let reporter = RevenueReporter(client: db.client)
            try await withTemporaryFolder { folder in
                let standard = try writeAndRead(try await reporter.daily(date: day("2025-04-01")), to: folder + "/30")
                let usd = try #require(
                    standard.row(["level": "item", "currency": "USD", "item_kind": "face", "item_index": "1"]))
                // 0.99 × 30% = 0.297 → 0.30 per unit; two units.
                #expect(
                    usd["gross"] == "1.98" && usd["estimated_commission"] == "0.60"
                        && usd["estimated_proceeds"] == "1.38")
                #expect(usd["commission_rate"] == "0.30")
                let krw = try #require(standard.row(["level": "currency", "currency": "KRW"]))
                #expect(
                    krw["gross"] == "2500" && krw["estimated_commission"] == "750"
                        && krw["estimated_proceeds"] == "1750")
                let jpy = try #require(standard.row(["level": "currency", "currency": "JPY"]))
                #expect(jpy["gross"] == "300" && jpy["estimated_commission"] == "90")
                #expect(
                    standard.markdown.contains("### KRW") && standard.markdown.contains("### USD")
                        && standard.markdown.contains("### JPY"))

                let small = ReportOptions(commission: CommissionRate(decimal: "0.15")!)
                let reduced = try writeAndRead(
                    try await reporter.daily(date: day("2025-04-01"), options: small), to: folder + "/15")
                // 0.99 × 15% = 0.1485 → 0.15 per unit; 2,500 × 15% = 375.
                let reducedUSD = try #require(reduced.row(["level": "currency", "currency": "USD"]))
                #expect(reducedUSD["estimated_commission"] == "0.30" && reducedUSD["commission_rate"] == "0.15")
                #expect(reduced.row(["level": "currency", "currency": "KRW"])?["estimated_commission"] == "375")
                #expect(reduced.markdown.contains("store commission at 15% of each unit's price"))
            }
        }
    }

    @Test("a refund counts on the day the store processed it, a reversal on its own day")
    func refundOnLaterDay() async throws {
        try await withReportLedger { db, ledger in
            _ = try await ledger.register(uid: "dave", profile: testProfile)
            _ = try await ledger.recordPurchase(
                transaction("p1", item: .face(3), at: instant("2025-03-01T10:00:00Z"), price: 2_500_000), for: "dave")
            _ = try await ledger.recordRefundEvent(
                refundEvent("e1", .refund, for: "p1", at: instant("2025-03-04T09:15:00Z")))
            _ = try await ledger.recordRefundEvent(
                refundEvent("e2", .refundReversal, for: "p1", at: instant("2025-03-06T20:00:00Z")))
            let reporter = RevenueReporter(client: db.client)
            let purchaseDay = try await reporter.daily(date: day("2025-03-01")).whole.total(
                book: "production", currency: "KRW")
            #expect(purchaseDay.purchases == 1 && purchaseDay.refunds == 0 && purchaseDay.netMilli == 2_500_000)
            try await withTemporaryFolder { folder in
                let refundDay = try writeAndRead(try await reporter.daily(date: day("2025-03-04")), to: folder)
                let row = try #require(refundDay.row(["level": "item", "item_kind": "face", "item_index": "3"]))
                #expect(row["purchases"] == "0" && row["refunds"] == "1" && row["refunded_amount"] == "2500")
                #expect(
                    row["net_revenue"] == "-2500" && row["estimated_commission"] == "-750"
                        && row["estimated_proceeds"] == "-1750")
                #expect(row["buyers"] == "0")
                let markdown = refundDay.markdown
                #expect(markdown.contains("1 refund and 0 reversals"))
                #expect(
                    markdown.contains(
                        try Regex(
                            "\\| 2025-03-04 09:15:00 +\\| refund +\\| p1 +\\| 퍼플 새싹 \\(face 3\\) +\\| 2,500 KRW \\| 2025-03-01 +\\| app issue"
                        )))
                #expect(markdown.contains("on the day the store processed them"))
            }
            let reversalDay = try await reporter.daily(date: day("2025-03-06")).whole.total(
                book: "production", currency: "KRW")
            #expect(
                reversalDay.reversals == 1 && reversalDay.reversedMilli == 2_500_000
                    && reversalDay.netMilli == 2_500_000)
            #expect(reversalDay.commissionMilli == 750_000)
        }
    }

    @Test("an empty day writes a header-only CSV and says so in Markdown")
    func emptyDay() async throws {
        try await withReportLedger { db, _ in
            let reporter = RevenueReporter(client: db.client)
            try await withTemporaryFolder { folder in
                let written = try writeAndRead(try await reporter.daily(date: day("2025-02-28")), to: folder)
                #expect(written.rows.isEmpty)
                #expect(written.header == RevenueCSV.columns)
                let expectedBytes =
                    Array("\u{FEFF}".utf8) + Array((RevenueCSV.columns.joined(separator: ",") + "\r\n").utf8)
                #expect(written.csvBytes == expectedBytes)
                #expect(
                    written.markdown.contains(
                        "No production purchases or refunds on this day, the day before or the 7 days before it."))
                #expect(written.markdown.contains("**Data as of:** the ledger is empty."))
                #expect(
                    written.markdown.contains("No production refunds or refund reversals were processed on this day."))
                #expect(written.markdown.hasSuffix("The ledger is empty._\n"))
            }
        }
    }

    @Test("re-running the report over the same ledger writes byte-identical files, and leaves no temporary files")
    func byteIdenticalReruns() async throws {
        try await withReportLedger { db, ledger in
            _ = try await RandomLedgerReportTests.recordRandomLedger(ledger, seed: 7)
            let reporter = RevenueReporter(client: db.client)
            try await withTemporaryFolder { folder in
                let options = ReportOptions(timeZone: "Asia/Seoul")
                let first = try writeAndRead(
                    try await reporter.daily(date: day("2025-03-05"), options: options), to: folder)
                let second = try writeAndRead(
                    try await reporter.daily(date: day("2025-03-05"), options: options), to: folder)
                #expect(!first.rows.isEmpty)
                #expect(first.csvBytes == second.csvBytes)
                #expect(first.markdownBytes == second.markdownBytes, "\(first.markdown)\n---\n\(second.markdown)")
                #expect(
                    try FileManager.default.contentsOfDirectory(atPath: folder + "/2025-03-05").sorted() == [
                        "revenue.csv", "revenue.md",
                    ])
                // New activity on another day changes nothing but the watermark.
                _ = try await ledger.recordPurchase(
                    transaction("later", item: .face(1), at: instant("2025-03-20T00:00:00Z"), price: 1_200_000),
                    for: "user1")
                let third = try writeAndRead(
                    try await reporter.daily(date: day("2025-03-05"), options: options), to: folder)
                #expect(third.csvBytes == first.csvBytes)
                func withoutWatermark(_ text: String) -> [Substring] {
                    text.split(separator: "\n").filter { !$0.contains("Data as of") }
                }
                #expect(withoutWatermark(third.markdown) == withoutWatermark(first.markdown))
                #expect(third.markdown.split(separator: "\n").filter { $0.contains("Data as of") }.count == 2)
            }
        }
    }

    @Test("family-shared grants, unpriced purchases and sandbox or stub traffic never reach revenue")
    func grantsAndTestTraffic() async throws {
        try await withReportLedger { db, ledger in
            for uid in ["erin", "fay"] { _ = try await ledger.register(uid: uid, profile: testProfile) }
            let at = instant("2025-05-05T05:00:00Z")
            _ = try await ledger.recordPurchase(
                transaction("paid", item: .face(1), at: at, price: 1_200_000), for: "erin")
            _ = try await ledger.recordPurchase(
                transaction("shared", item: .face(2), at: at, price: 2_500_000, ownership: .familyShared), for: "fay")
            _ = try await ledger.recordPurchase(transaction("unpriced", item: .face(3), at: at, price: nil), for: "fay")
            _ = try await ledger.recordPurchase(
                transaction("sandbox", item: .face(4), at: at, price: 2_500_000, environment: .sandbox), for: "fay")
            _ = try await ledger.recordPurchase(
                transaction("stub", item: .background(5), at: at, price: 2_500_000, store: .stub, environment: .stub),
                for: "fay")
            let report = try await RevenueReporter(client: db.client).daily(date: day("2025-05-05"))
            let production = report.whole.total(book: "production", currency: "KRW")
            #expect(production.purchases == 1 && production.grossMilli == 1_200_000 && production.buyers == 1)
            try await withTemporaryFolder { folder in
                let written = try writeAndRead(report, to: folder)
                #expect(written.rows(level: "currency").count == 1)
                #expect(written.row(["book": "sandbox", "level": "currency"])?["gross"] == "2500")
                #expect(written.row(["book": "stub", "level": "currency"])?["purchases"] == "1")
                #expect(
                    written.row(["book": "production", "currency": "", "item_index": "2"])?["family_shared_grants"]
                        == "1")
                #expect(
                    written.row(["book": "production", "currency": "", "item_index": "3"])?["unpriced_purchases"] == "1"
                )
                // Production rows come first.
                #expect(written.rows.prefix(3).allSatisfy { $0["book"] == "production" })
                let markdown = written.markdown
                #expect(markdown.contains("## Test traffic (not revenue)"))
                #expect(markdown.contains(try Regex("\\| sandbox +\\| KRW +\\| +1 \\| +2,500 \\|")))
                #expect(markdown.contains(try Regex("\\| 민트 새싹 \\(face 2\\) +\\| +1 \\| +0 \\| +0 \\|")))
            }
        }
    }

    @Test("first-time buyers are those with no earlier purchase; buyers are distinct users")
    func buyers() async throws {
        try await withReportLedger { db, ledger in
            for uid in ["gus", "hana"] { _ = try await ledger.register(uid: uid, profile: testProfile) }
            _ = try await ledger.recordPurchase(
                transaction("g1", item: .face(1), at: instant("2025-06-01T08:00:00Z"), price: 1_200_000), for: "gus")
            _ = try await ledger.recordPurchase(
                transaction("g2", item: .face(2), at: instant("2025-06-02T08:00:00Z"), price: 2_500_000), for: "gus")
            _ = try await ledger.recordPurchase(
                transaction("g3", item: .background(2), at: instant("2025-06-02T09:00:00Z"), price: 1_200_000),
                for: "gus")
            _ = try await ledger.recordPurchase(
                transaction("h1", item: .face(2), at: instant("2025-06-02T10:00:00Z"), price: 2_500_000), for: "hana")
            _ = try await ledger.recordPurchase(
                transaction(
                    "h2", item: .background(2), at: instant("2025-06-02T11:00:00Z"), price: 990, currency: "USD"),
                for: "hana")
            let report = try await RevenueReporter(client: db.client).daily(date: day("2025-06-02"))
            let krw = report.whole.total(book: "production", currency: "KRW")
            #expect(krw.purchases == 3 && krw.buyers == 2 && krw.firstTimeBuyers == 1)
            #expect(
                report.whole.lines[RevenueLineKey(book: "production", currency: "KRW", kind: .face, index: 2)]?.buyers
                    == 2)
            #expect(report.whole.lines[RevenueLineKey(book: "production", currency: "KRW", kind: .face)]?.buyers == 2)
            #expect(report.whole.buyersByBook["production"] == BuyerCounts(buyers: 2, firstTime: 1))
            let markdown = RevenueMarkdown.render(report)
            #expect(markdown.contains("Buyers in all currencies on the day: 2 (1 first-time)."))
            // The headline compares with the day before (one buyer, first-time).
            #expect(markdown.contains(try Regex("\\| buyers +\\| +2 \\| +1 \\| +\\+100\\.0% \\|")))
        }
    }

    @Test("the Markdown has every section, a GitHub Mermaid chart and the reconciliation verdict")
    func markdownLayout() async throws {
        try await withReportLedger { db, ledger in
            _ = try await RandomLedgerReportTests.recordRandomLedger(ledger, seed: 11)
            let markdown = RevenueMarkdown.render(
                try await RevenueReporter(client: db.client).daily(date: day("2025-03-06")))
            for heading in [
                "# Revenue report for 2025-03-06 (UTC)", "## Headline", "## Faces", "## Backgrounds",
                "## Refunds on this day",
                "## 14-day trend", "## Grants without revenue", "## Test traffic (not revenue)", "## Reconciliation",
            ] {
                #expect(markdown.contains("\n\(heading)\n") || markdown.hasPrefix(heading + "\n"), "missing \(heading)")
            }
            #expect(
                markdown.contains(
                    "```mermaid\nxychart-beta\n    title \"Net revenue (KRW), 2025-02-21 to 2025-03-06\"\n"))
            #expect(markdown.contains("    x-axis [\"02-21\", \"02-22\""))
            #expect(markdown.contains("PASS `report_totals_match_ledger`"))
            #expect(markdown.contains("**Reconciliation:** passed"))
            #expect(markdown.contains("**Data as of:** 20"))
            // Tables line up in plain text: all lines of a table are equally wide on a terminal,
            // where Hangul takes two columns.
            var tables: [[Substring]] = [[]]
            for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("| ") {
                    tables[tables.count - 1].append(line)
                } else if !tables.last!.isEmpty {
                    tables.append([])
                }
            }
            tables.removeAll { $0.isEmpty }
            #expect(tables.count >= 5)
            func terminalWidth(_ line: Substring) -> Int {
                line.unicodeScalars.reduce(0) { $0 + ((0xAC00...0xD7A3).contains($1.value) ? 2 : 1) }
            }
            for table in tables {
                #expect(Set(table.map(terminalWidth)).count == 1, "a ragged table:\n\(table.joined(separator: "\n"))")
            }
        }
    }
}
