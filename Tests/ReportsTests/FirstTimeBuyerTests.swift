import CivilDates
import Foundation
import Ledger
import Receipts
import Reports
import TestSupport
import Testing

/// Who counts as a first-time buyer: a user whose earliest purchase that was priced when recorded,
/// bought for themselves (not family-shared), in the same book, falls in the period. Refunds,
/// family sharing, prices learned later, other books and free items (grants, not purchases) do not
/// change that; neither does the order in which purchases were recorded.
@Suite("Reports: first-time buyers")
struct FirstTimeBuyerTests {
    @Test("earlier days, refunds, family sharing, late prices, test books and recording order")
    func trickyCases() async throws {
        try await withReportLedger { db, ledger in
            let users = ["ana", "ben", "cho", "dan", "eve", "fin", "gus", "hal"]
            // Each registration also grants the free items: grants, never purchases.
            for uid in users { _ = try await ledger.register(uid: uid, profile: testProfile) }
            func buy(
                _ id: String, _ uid: String, _ item: ItemID, on date: String, price: Int64? = 1_200_000,
                ownership: OwnershipType = .purchased, environment: StoreEnvironment = .production
            ) async throws {
                _ = try await ledger.recordPurchase(
                    transaction(
                        id, item: item, at: instant("\(date)T03:00:00Z"), price: price, environment: environment,
                        ownership: ownership),
                    for: uid)
            }
            // ana bought on an earlier day: returning.
            try await buy("ana-1", "ana", .face(1), on: "2025-06-07")
            try await buy("ana-2", "ana", .face(2), on: "2025-06-10")
            // ben's earlier purchase was refunded: still an earlier purchase, so returning.
            try await buy("ben-1", "ben", .face(1), on: "2025-06-07")
            _ = try await ledger.recordRefundEvent(
                refundEvent("ben-refund", .refund, for: "ben-1", at: instant("2025-06-08T03:00:00Z")))
            try await buy("ben-2", "ben", .face(2), on: "2025-06-10")
            // cho's earlier item was family-shared: first-time.
            try await buy("cho-1", "cho", .face(1), on: "2025-06-07", ownership: .familyShared)
            try await buy("cho-2", "cho", .face(2), on: "2025-06-10")
            // dan's earlier purchase was recorded unpriced, its price learned the day before: first-time.
            try await buy("dan-1", "dan", .face(1), on: "2025-06-07", price: nil)
            var learned = transaction("dan-1", item: .face(1), at: instant("2025-06-07T03:00:00Z"), price: 1_200_000)
            learned.signedDate = instant("2025-06-09T03:00:00Z")
            learned.evidenceSHA256 = fakeDigest("apple/dan-1")
            _ = try await ledger.recordLearnedPrice(learned)
            try await buy("dan-2", "dan", .face(2), on: "2025-06-10")
            // eve bought before only in the sandbox: first-time in production.
            try await buy("eve-1", "eve", .face(1), on: "2025-06-07", environment: .sandbox)
            try await buy("eve-2", "eve", .face(2), on: "2025-06-10")
            // fin buys twice on the day, nothing before: one first-time buyer.
            try await buy("fin-1", "fin", .face(1), on: "2025-06-10")
            try await buy("fin-2", "fin", .background(2), on: "2025-06-10")
            // gus: first-time the day before, returning on the day.
            try await buy("gus-1", "gus", .face(1), on: "2025-06-09")
            try await buy("gus-2", "gus", .face(2), on: "2025-06-10")
            // hal's earlier purchase is recorded after the day's (a restore): returning all the same.
            try await buy("hal-2", "hal", .face(2), on: "2025-06-10")
            try await buy("hal-1", "hal", .face(1), on: "2025-06-05")

            let report = try await RevenueReporter(client: db.client).daily(date: day("2025-06-10"))
            #expect(report.whole.buyersByBook["production"] == BuyerCounts(buyers: 8, firstTime: 4))
            let krw = report.whole.total(book: "production", currency: "KRW")
            #expect(krw.buyers == 8 && krw.firstTimeBuyers == 4)
            let face2 = report.whole.lines[RevenueLineKey(book: "production", currency: "KRW", kind: .face, index: 2)]
            #expect(face2?.buyers == 7 && face2?.firstTimeBuyers == 3)
            // The trend: first-time gus on 06-09, hal on 06-05, ana and ben on 06-07 (that day's
            // family-shared, unpriced and sandbox purchases make no production buyer).
            let byDay = Dictionary(uniqueKeysWithValues: report.trend.map { ($0.period.first, $0) })
            #expect(byDay[day("2025-06-09")]?.buyersByBook["production"] == BuyerCounts(buyers: 1, firstTime: 1))
            #expect(byDay[day("2025-06-07")]?.buyersByBook["production"] == BuyerCounts(buyers: 2, firstTime: 2))
            #expect(byDay[day("2025-06-05")]?.buyersByBook["production"] == BuyerCounts(buyers: 1, firstTime: 1))
            #expect(report.whole.buyersByBook["sandbox"] == nil)
        }
    }
}
