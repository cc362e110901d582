import CivilDates
import Foundation
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Reports

/// The report day cache (migration 0013) holds the daily report's rows per local day. The report
/// must come out byte for byte the same whatever it holds, and after entries recorded late into a
/// day it already holds: the reader computes such days, the catch-up deletes them.
@Suite("Reports: the report day cache")
struct ReportDayCacheTests {
    static let date = day("2025-06-10")
    static let days = (0..<RevenueReporter.historyDays).map { date.adding(days: -$0) }

    /// Purchases, refunds, a reversal, family sharing, an unpriced purchase and test traffic over
    /// the trend's days; ana's first purchase is on 06-08, cho's purchase on 06-02 is unpriced.
    func fillLedger(_ ledger: LedgerStore) async throws {
        for uid in ["ana", "ben", "cho", "dan", "eve"] { _ = try await ledger.register(uid: uid, profile: testProfile) }
        try await buy(ledger, "a1", "ana", .face(1), at: "2025-06-08T03:00:00Z")
        try await buy(ledger, "a2", "ana", .face(2), at: "2025-06-10T23:30:00Z")
        try await buy(ledger, "b1", "ben", .face(1), at: "2025-06-03T03:00:00Z")
        try await buy(ledger, "b2", "ben", .background(1), at: "2025-06-03T05:00:00Z", price: 1_200_000)
        try await buy(ledger, "c1", "cho", .face(3), at: "2025-06-02T03:00:00Z", price: nil)
        try await buy(ledger, "d1", "dan", .face(1), at: "2025-06-05T03:00:00Z", ownership: .familyShared)
        try await buy(ledger, "d2", "dan", .face(2), at: "2025-06-09T03:00:00Z", currency: "USD", price: 990)
        try await buy(ledger, "e1", "eve", .face(1), at: "2025-05-28T01:00:00Z", environment: .sandbox)
        _ = try await ledger.recordRefundEvent(
            refundEvent("r1", .refund, for: "b2", at: instant("2025-06-04T09:00:00Z")))
        _ = try await ledger.recordRefundEvent(
            refundEvent("r2", .refundReversal, for: "b2", at: instant("2025-06-09T09:00:00Z")))
    }

    func buy(
        _ ledger: LedgerStore, _ id: String, _ uid: String, _ item: ItemID, at text: String, currency: String = "KRW",
        price: Int64? = 2_500_000, ownership: OwnershipType = .purchased, environment: StoreEnvironment = .production
    ) async throws {
        let outcome = try await ledger.recordPurchase(
            transaction(
                id, item: item, at: instant(text), price: price, currency: currency, environment: environment,
                ownership: ownership), for: uid)
        guard case .recorded = outcome else {
            Issue.record("\(id): \(outcome)")
            return
        }
    }

    /// What a catch-up five seconds after the last entry leaves: everything folded in, and the
    /// watermark (less the overlap) past every entry recorded so far.
    func settle(_ db: TestDatabase) async throws {
        try await FirstPurchaseCatchUp(client: db.client, invalidating: .reportDays).run()
        try await db.client.query(
            """
            UPDATE first_purchases_watermark
            SET caught_up_to = clock_timestamp() + \(unsafeSQL: FirstPurchaseSQL.overlap)
            """)
        try await Task.sleep(for: .milliseconds(20))
    }

    func cachedDays(_ db: TestDatabase) async throws -> [String] {
        try await db.client.query("SELECT day::text FROM report_days WHERE time_zone = 'UTC' ORDER BY 1")
            .map { try $0.decode(String.self, at: 0) }
    }

    /// The daily report without the pre-steps (this test holds their lock): the cache as it is.
    func reportAsCached(_ db: TestDatabase) async throws -> RevenueReport {
        try await FirstPurchaseCatchUpTests.reportWithoutCatchUp(db) {
            try await RevenueReporter(client: db.client).daily(date: Self.date)
        }
    }

    /// The report computed from the ledger alone: the cache set aside while it runs, then put back.
    func reportComputed(_ db: TestDatabase) async throws -> RevenueReport {
        let tables = ["report_days", "report_day_entries", "report_day_buyers", "report_day_store_buyers"]
        for table in tables {
            try await db.client.query(PostgresQuery(unsafeSQL: "CREATE TABLE aside_\(table) AS SELECT * FROM \(table)"))
        }
        try await db.client.query("DELETE FROM report_days")
        let report = try await reportAsCached(db)
        for table in tables {
            try await db.client.query(PostgresQuery(unsafeSQL: "INSERT INTO \(table) SELECT * FROM aside_\(table)"))
            try await db.client.query(PostgresQuery(unsafeSQL: "DROP TABLE aside_\(table)"))
        }
        return report
    }

    static func rendered(_ report: RevenueReport) -> [String] { ReportFormat.allCases.map { $0.render(report) } }

    /// The failures of the reconcile check over the cache, by id.
    func cacheFailures(_ db: TestDatabase) async throws -> [String] {
        try await db.client.withTransaction(.init(isolation: .repeatableRead, readOnly: true)) {
            try await ReportDayCacheCheck().run(on: $0, failureLimit: 50)
        }.failures.map(\.id)
    }

    @Test("the daily report's figures and files are the same with the cache empty, partly filled and full")
    func sameWhateverTheCacheHolds() async throws {
        try await withReportLedger { db, ledger in
            try await fillLedger(ledger)
            let empty = try await reportAsCached(db)
            #expect(try await cachedDays(db) == [])
            try await settle(db)
            // Partly: four days in the middle, filled as the report's pre-step fills them.
            let filled = try await FirstPurchaseCatchUp(client: db.client, invalidating: .reportDays).whileLocked {
                connection in
                let periods = try await RevenueQueries.periods(
                    (3...6).map { day("2025-06-0\($0)")...day("2025-06-0\($0)") }, timeZone: "UTC", on: connection)
                return try await ReportDayCache.fill(periods, timeZone: "UTC", on: connection)
            }
            guard case .ran(4) = filled else {
                Issue.record("the partial fill: \(filled)")
                return
            }
            #expect(try await cachedDays(db) == ["2025-06-03", "2025-06-04", "2025-06-05", "2025-06-06"])
            let partly = try await reportAsCached(db)
            // Full: the report's own pre-step fills the other 86 days; the next report reads all 90.
            let filling = try await RevenueReporter(client: db.client).daily(date: Self.date)
            #expect(try await cachedDays(db) == Self.days.map(\.description).sorted())
            let full = try await reportAsCached(db)
            #expect(try await cacheFailures(db) == [])

            #expect(full.whole.total(book: "production", currency: "KRW").purchases == 1)
            #expect(full.trend.count == RevenueReporter.trendDays)
            for other in [empty, partly, filling] {
                #expect(other.trend == full.trend)
                #expect(Self.rendered(other) == Self.rendered(full))
            }
            // The full report did read the cache: a changed cached row shows in it.
            try await db.client.query(
                "UPDATE report_day_entries SET entries = entries + 1 WHERE day = '2025-06-03' AND kind = 'purchase'")
            #expect(try await reportAsCached(db).trend != full.trend)
            try await db.client.query("DELETE FROM report_days")
        }
    }

    /// An entry recorded into a day already cached, how it changes the report, and the days it
    /// changes.
    struct LateEntry: Sendable, CustomTestStringConvertible {
        let label: String
        let changedDays: [String]
        let record: @Sendable (LedgerStore) async throws -> Void
        var testDescription: String { label }
    }

    static let lateEntries: [LateEntry] = [
        LateEntry(label: "a purchase delivered late, by a new buyer", changedDays: ["2025-06-05"]) { ledger in
            _ = try await ledger.recordPurchase(
                transaction("e2", item: .face(2), at: instant("2025-06-05T04:00:00Z"), price: 2_500_000), for: "eve")
        },
        LateEntry(
            label: "a restored purchase before ana's first, which moves her first-time flag",
            changedDays: ["2025-06-04", "2025-06-08"]
        ) { ledger in
            _ = try await ledger.recordPurchase(
                transaction("a0", item: .face(3), at: instant("2025-06-04T04:00:00Z"), price: 2_500_000), for: "ana")
        },
        LateEntry(label: "a refund the store signed days ago", changedDays: ["2025-06-07"]) { ledger in
            _ = try await ledger.recordRefundEvent(
                refundEvent("r3", .refund, for: "a1", at: instant("2025-06-07T09:00:00Z")))
        },
        LateEntry(label: "a price learned, signed days ago", changedDays: ["2025-06-06"]) { ledger in
            var signed = transaction("c1", item: .face(3), at: instant("2025-06-02T03:00:00Z"), price: 2_500_000)
            signed.signedDate = instant("2025-06-06T12:00:00Z")
            signed.evidenceSHA256 = fakeDigest("apple/c1")
            _ = try await ledger.recordLearnedPrice(signed)
        },
    ]

    @Test(
        "an entry recorded late into a cached day: computed by readers, deleted by the catch-up", arguments: lateEntries
    )
    func lateEntry(_ late: LateEntry) async throws {
        try await withReportLedger { db, ledger in
            try await fillLedger(ledger)
            try await settle(db)
            let before = try await RevenueReporter(client: db.client).daily(date: Self.date)
            #expect(try await cachedDays(db).count == RevenueReporter.historyDays)
            let watermark = try await db.client.query("SELECT caught_up_to FROM first_purchases_watermark")
                .single().decode(Date.self, at: 0)
            try await late.record(ledger)

            // The reader: the entry was recorded since the watermark, so its days are computed.
            let truth = try await reportComputed(db)
            #expect(truth.trend != before.trend, "the late entry changes nothing in the report")
            let read = try await reportAsCached(db)
            #expect(Self.rendered(read) == Self.rendered(truth))
            let changed = zip(before.trend, truth.trend).filter { $0 != $1 }.map { $0.0.period.first.description }
            #expect(changed == late.changedDays)

            // Without invalidation the cache is stale: the catch-up's work without its deletion (the
            // first purchases folded in, the watermark moved past the entry) gives the old figures,
            // and reconcile names those days.
            try await db.client.query(
                """
                INSERT INTO first_purchases AS f (uid, book, first_at)
                SELECT uid, book, min(purchased_at) FROM purchases
                WHERE ownership = 'PURCHASED' AND currency IS NOT NULL GROUP BY uid, book
                ON CONFLICT (uid, book) DO UPDATE SET first_at = least(f.first_at, EXCLUDED.first_at)
                """)
            try await db.client.query(
                """
                UPDATE first_purchases_watermark
                SET caught_up_to = clock_timestamp() + \(unsafeSQL: FirstPurchaseSQL.overlap)
                """)
            let stale = try await reportAsCached(db)
            #expect(stale.trend == before.trend)
            #expect(try await cacheFailures(db) == late.changedDays.map { "UTC \($0)" })
            try await db.client.query("UPDATE first_purchases_watermark SET caught_up_to = \(watermark)")

            // The catch-up deletes exactly the days the entry changes; the next report fills them again.
            guard
                case .caughtUp(_, let staleDays, _) = try await FirstPurchaseCatchUp(
                    client: db.client, invalidating: .reportDays
                ).run()
            else {
                Issue.record("the catch-up was skipped")
                return
            }
            #expect(staleDays == late.changedDays.count)
            #expect(Set(try await cachedDays(db)).isDisjoint(with: late.changedDays))
            // Run again it deletes nothing more (and a deleted day is simply filled again later).
            guard
                case .caughtUp(_, 0, _) = try await FirstPurchaseCatchUp(client: db.client, invalidating: .reportDays)
                    .run()
            else {
                Issue.record("a second catch-up deleted days or was skipped")
                return
            }
            try await settle(db)
            let refilled = try await RevenueReporter(client: db.client).daily(date: Self.date)
            #expect(try await cachedDays(db).count == RevenueReporter.historyDays)
            #expect(Self.rendered(refilled) == Self.rendered(truth))
            #expect(Self.rendered(try await reportAsCached(db)) == Self.rendered(truth))
            #expect(try await cacheFailures(db) == [])
        }
    }

    @Test("a late entry deletes its day in every cached time zone, and each zone's report stays the same")
    func everyTimeZone() async throws {
        try await withReportLedger { db, ledger in
            try await fillLedger(ledger)
            try await settle(db)
            let zones = ["UTC", "Asia/Seoul", "America/Los_Angeles"]
            func reports() async throws -> [[String]] {
                var rendered: [[String]] = []
                for zone in zones {
                    rendered.append(
                        Self.rendered(
                            try await RevenueReporter(client: db.client).daily(
                                date: Self.date, options: ReportOptions(timeZone: zone))))
                }
                return rendered
            }
            _ = try await reports()
            let count: PostgresQuery = "SELECT count(*) FROM report_days"
            #expect(
                try await db.client.query(count).single().decode(Int.self, at: 0) == 3 * RevenueReporter.historyDays)
            // A refund signed at 2025-06-07 09:00 UTC: 06-07 in UTC, in Seoul and in Los Angeles.
            _ = try await ledger.recordRefundEvent(
                refundEvent("r3", .refund, for: "a1", at: instant("2025-06-07T09:00:00Z")))
            guard
                case .caughtUp(_, let staleDays, _) = try await FirstPurchaseCatchUp(
                    client: db.client, invalidating: .reportDays
                ).run()
            else {
                Issue.record("the catch-up was skipped")
                return
            }
            #expect(staleDays == 3)
            let uncached = try await db.client.query(
                """
                SELECT z.zone FROM unnest(\(zones)::text[]) AS z (zone)
                WHERE NOT EXISTS (SELECT 1 FROM report_days r WHERE r.time_zone = z.zone AND r.day = '2025-06-07')
                """
            ).map { try $0.decode(String.self, at: 0) }
            #expect(Set(uncached) == Set(zones))
            // Each zone's report, reading its cache, equals the one computed from the ledger alone.
            let read = try await reports()
            try await db.client.query("DELETE FROM report_days")
            var computed: [[String]] = []
            for zone in zones {
                let report = try await FirstPurchaseCatchUpTests.reportWithoutCatchUp(db) {
                    try await RevenueReporter(client: db.client).daily(
                        date: Self.date, options: ReportOptions(timeZone: zone))
                }
                computed.append(Self.rendered(report))
            }
            #expect(read == computed)
        }
    }

    @Test("reconcile names a cached day whose rows were changed, added or removed")
    func reconcileNamesCorruptedDays() async throws {
        try await withReportLedger { db, ledger in
            try await fillLedger(ledger)
            try await settle(db)
            _ = try await RevenueReporter(client: db.client).daily(date: Self.date)
            #expect(try await cacheFailures(db) == [])
            try await db.client.query(
                "UPDATE report_day_entries SET price_milli = price_milli + 1 WHERE day = '2025-06-03' AND kind = 'purchase' AND item_kind = 'face'"
            )
            try await db.client.query(
                "UPDATE report_day_buyers SET first_time_buyers = 0 WHERE day = '2025-06-08' AND level = 7")
            try await db.client.query(
                "INSERT INTO report_day_entries SELECT * FROM report_day_entries WHERE day = '2025-06-09' LIMIT 1")
            try await db.client.query("DELETE FROM report_day_buyers WHERE day = '2025-06-10'")
            #expect(
                try await cacheFailures(db) == ["UTC 2025-06-03", "UTC 2025-06-08", "UTC 2025-06-09", "UTC 2025-06-10"])
            try await db.client.query("DELETE FROM report_days")
        }
    }

    /// `body` with a client whose every transaction is read-only, as on a hot standby.
    func withReadOnlyRole<R: Sendable>(
        _ db: TestDatabase, _ body: (PostgresClient) async throws -> R
    ) async throws -> R {
        let separator = db.url.contains("?") ? "&" : "?"
        return try await withClient(url: db.url + separator + "options=-cdefault_transaction_read_only%3Don", body)
    }

    @Test("a read-only report (as on a standby) fills nothing and reads the cache the primary filled")
    func readOnly() async throws {
        try await withReportLedger { db, ledger in
            try await fillLedger(ledger)
            try await settle(db)
            let computed = try await withReadOnlyRole(db) {
                try await RevenueReporter(client: $0).daily(date: Self.date)
            }
            #expect(try await cachedDays(db) == [])
            _ = try await RevenueReporter(client: db.client).daily(date: Self.date)
            #expect(try await cachedDays(db).count == RevenueReporter.historyDays)
            let cached = try await withReadOnlyRole(db) { try await RevenueReporter(client: $0).daily(date: Self.date) }
            #expect(Self.rendered(cached) == Self.rendered(computed))
        }
    }
}
