import Foundation
import Ledger
import Postgres
import Receipts
import Reports
import TestSupport
import Testing

/// A price learned later counts on the day it is learned (its entry's `effective_at`, when the store
/// signed it), as a refund counts on its own day; the purchase's own day keeps it as an unpriced grant.
@Suite("Reports: prices learned later")
struct LatePriceReportTests {
    /// The store's signed transaction of unpriced purchase `id`, signed at `signedAt`.
    static func signed(_ id: String, item: ItemID, price: Int64, signedAt: Date) -> VerifiedTransaction {
        var signed = transaction(id, item: item, at: instant("2025-03-05T10:00:00Z"), price: price)
        signed.signedDate = signedAt
        signed.evidenceSHA256 = fakeDigest("apple/\(id)")
        return signed
    }

    @Test("unpriced on the purchase day; revenue (and a refund learned with it) on the day the price is learned")
    func lateRevenueOnItsDay() async throws {
        try await withReportLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            let bought = instant("2025-03-05T10:00:00Z")
            for (id, item) in [("late", ItemID.face(2)), ("refunded", .face(3)), ("after", .background(2))] {
                _ = try await ledger.recordPurchase(transaction(id, item: item, at: bought, price: nil), for: "alice")
            }
            _ = try await ledger.recordRefundEvent(
                refundEvent("r1", .refund, for: "refunded", at: instant("2025-03-06T10:00:00Z")))
            let learned = instant("2025-03-07T12:00:00Z")
            _ = try await ledger.recordLearnedPrice(
                Self.signed("late", item: .face(2), price: 2_500_000, signedAt: learned))
            _ = try await ledger.recordLearnedPrice(
                Self.signed("refunded", item: .face(3), price: 2_500_000, signedAt: learned))
            _ = try await ledger.recordLearnedPrice(
                Self.signed("after", item: .background(2), price: 1_200_000, signedAt: learned))
            _ = try await ledger.recordRefundEvent(
                refundEvent("r2", .refund, for: "after", at: instant("2025-03-08T10:00:00Z")))

            let reporter = RevenueReporter(client: db.client)
            let purchaseDay = try await reporter.daily(date: day("2025-03-05"))
            #expect(purchaseDay.whole.total(book: "production", currency: "KRW").isEmpty)
            let unpriced = purchaseDay.whole.sortedGrants(in: "production").map(\.figures.unpriced).reduce(0, +)
            #expect(unpriced == 3)

            let refundDay = try await reporter.daily(date: day("2025-03-06"))
            #expect(refundDay.whole.total(book: "production", currency: "KRW").isEmpty)
            #expect(refundDay.refunds.isEmpty)

            let learnedDay = try await reporter.daily(date: day("2025-03-07"))
            let total = learnedDay.whole.total(book: "production", currency: "KRW")
            #expect(total.purchases == 3 && total.grossMilli == 6_200_000)
            #expect(total.refunds == 1 && total.refundedMilli == 2_500_000 && total.netMilli == 3_700_000)
            #expect(learnedDay.refunds.map(\.transactionId) == ["refunded"])
            #expect(learnedDay.refunds.first?.amount == Money(amountMilli: 2_500_000, currency: "KRW"))
            #expect(learnedDay.reconciled, "\(learnedDay.reconciliation)")

            let laterRefund = try await reporter.daily(date: day("2025-03-08"))
            let refunded = laterRefund.whole.total(book: "production", currency: "KRW")
            #expect(refunded.refunds == 1 && refunded.refundedMilli == 1_200_000 && refunded.purchases == 0)
            #expect(laterRefund.refunds.map(\.transactionId) == ["after"])
            #expect(laterRefund.reconciled)
        }
    }
}
