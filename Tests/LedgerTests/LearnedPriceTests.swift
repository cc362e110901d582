import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

/// A purchase recorded without a price (a classic receipt's entry while Apple did not answer) gets
/// Apple's signed price later as a `price_learned` journal entry; the purchase row never changes.
@Suite("Prices learned later")
struct LearnedPriceTests {
    /// Apple's signed transaction of unpriced purchase `id`: same purchase, a price, other evidence.
    static func signed(
        _ id: String, item: ItemID = .face(3), price: Int64 = 2_500_000, currency: String = "KRW",
        ownership: OwnershipType = .purchased
    ) -> VerifiedTransaction {
        makeTransaction(id, item: item, price: price, currency: currency, ownership: ownership, evidence: "apple")
    }

    static func entryKinds(_ client: PostgresClient, _ id: String) async throws -> [String] {
        try await client.query("SELECT kind FROM journal_entries WHERE transaction_id = \(id)::text ORDER BY seq").map {
            try $0.decode(String.self, at: 0)
        }
    }

    @Test("an unpriced purchase gets its price as a new entry, once; the purchase row keeps no price")
    func priceOnce() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("u1", item: .face(3), unpriced: true), for: "alice")
            #expect(try await balances(db.client).isEmpty)

            let price = Money(amountMilli: 2_500_000, currency: "KRW")
            #expect(try await ledger.recordLearnedPrice(Self.signed("u1")) == .recorded(price))
            #expect(try await Self.entryKinds(db.client, "u1") == ["purchase", "price_learned"])
            #expect(
                try await balances(db.client) == ["receivable:app_store": 2_500_000, "revenue:face": -2_500_000])
            #expect(try await scalar(db.client, "SELECT count(*) FROM purchases WHERE price_milli IS NULL") == 1)
            let history = try await ledger.purchaseHistory(of: "alice")
            #expect(history.first?.price == price && history.first?.state == .live)
            #expect(try await ledger.unpricedPurchases(limit: 10).isEmpty)

            // Again, and with Apple's payload signed again: nothing new.
            let before = try await ledgerRowCounts(db.client)
            #expect(try await ledger.recordLearnedPrice(Self.signed("u1")) == .duplicate(price))
            #expect(try await ledgerRowCounts(db.client) == before)
        }
    }

    @Test("a priced re-post of an unpriced purchase: the one recordPurchase call books the price, once, and shows it")
    func repostBooksPrice() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("u1", item: .face(3), unpriced: true), for: "alice")
            let price = Money(amountMilli: 2_500_000, currency: "KRW")
            guard case .duplicate(let shown) = try await ledger.recordPurchase(Self.signed("u1"), for: "alice") else {
                Issue.record("Apple's signed transaction of a recorded purchase is a duplicate")
                return
            }
            #expect(shown.price == price)
            #expect(try await Self.entryKinds(db.client, "u1") == ["purchase", "price_learned"])
            #expect(
                try await balances(db.client) == ["receivable:app_store": 2_500_000, "revenue:face": -2_500_000])

            // Again: the learned price shows, nothing is written.
            let before = try await ledgerRowCounts(db.client)
            guard case .duplicate(let again) = try await ledger.recordPurchase(Self.signed("u1"), for: "alice") else {
                Issue.record("posted again it is a duplicate")
                return
            }
            #expect(again.price == price)
            #expect(try await ledgerRowCounts(db.client) == before)

            // Another user posting it learns nothing and books nothing.
            _ = try await ledger.register(uid: "bob", profile: testProfile)
            let registered = try await ledgerRowCounts(db.client)
            #expect(try await ledger.recordPurchase(Self.signed("u1"), for: "bob") == .conflict(.ownedByAnotherUser))
            #expect(try await ledgerRowCounts(db.client) == registered)
        }
    }

    @Test("a lookup that did not price a purchase: the wait doubles per attempt up to a day, then it is due again")
    func lookupBackoff() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("u5", item: .face(3), unpriced: true), for: "alice")
            _ = try await ledger.recordPurchase(makeTransaction("u6", item: .face(4), unpriced: true), for: "alice")
            let u5 = UnpricedPurchase(environment: .production, transactionId: "u5")
            let start = Date(timeIntervalSince1970: 1_790_000_000)
            var minutes: [Int] = []
            for attempt in 0..<9 {
                let at = start.addingTimeInterval(Double(attempt) * 100_000)
                let next = try await ledger.recordPriceLookupFailure(u5, outcome: "not found", at: at)
                minutes.append(Int((next.timeIntervalSince(at) / 60).rounded()))
            }
            #expect(minutes == [15, 30, 60, 120, 240, 480, 960, 1_440, 1_440], "\(minutes)")
            // u6, never asked, first; u5 only once its wait has run out; both without a time.
            let lastWaitEnds = start.addingTimeInterval(8 * 100_000 + 86_400)
            let dueBefore = try await ledger.unpricedPurchases(limit: 5, dueAt: lastWaitEnds - 1)
            #expect(dueBefore.map(\.transactionId) == ["u6"])
            let dueThen = try await ledger.unpricedPurchases(limit: 5, dueAt: lastWaitEnds)
            #expect(dueThen.map(\.transactionId) == ["u6", "u5"])
            #expect(try await ledger.unpricedPurchases(limit: 5).map(\.transactionId) == ["u6", "u5"])
            // Bookkeeping, not the ledger: one row, nothing posted.
            #expect(try await scalar(db.client, "SELECT count(*) FROM price_lookups") == 1)
            #expect(try await balances(db.client).isEmpty)
        }
    }

    @Test("another price, another purchase, a family-shared or unknown one: nothing written")
    func refusals() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("u2", item: .face(3), unpriced: true), for: "alice")
            _ = try await ledger.recordPurchase(makeTransaction("p2", item: .face(2)), for: "alice")
            _ = try await ledger.recordPurchase(
                makeTransaction("s2", item: .face(4), unpriced: true, ownership: .familyShared), for: "alice")
            #expect(try await ledger.unpricedPurchases(limit: 10).map(\.transactionId) == ["u2"])
            _ = try await ledger.recordLearnedPrice(Self.signed("u2"))
            let before = try await ledgerRowCounts(db.client)

            let known = Money(amountMilli: 2_500_000, currency: "KRW")
            #expect(
                try await ledger.recordLearnedPrice(Self.signed("u2", price: 3_300_000))
                    == .conflict(recorded: known, stated: Money(amountMilli: 3_300_000, currency: "KRW")))
            #expect(
                try await ledger.recordLearnedPrice(Self.signed("u2", currency: "USD"))
                    == .conflict(recorded: known, stated: Money(amountMilli: 2_500_000, currency: "USD")))
            // Priced when recorded: the same price is a duplicate, another a conflict.
            #expect(try await ledger.recordLearnedPrice(Self.signed("p2", item: .face(2))) == .duplicate(known))
            #expect(
                try await ledger.recordLearnedPrice(Self.signed("p2", item: .face(2), price: 1))
                    == .conflict(recorded: known, stated: Money(amountMilli: 1, currency: "KRW")))
            #expect(try await ledger.recordLearnedPrice(Self.signed("u2", item: .face(4))) == .evidenceDiffers)
            #expect(
                try await ledger.recordLearnedPrice(Self.signed("s2", item: .face(4), ownership: .familyShared))
                    == .familyShared)
            #expect(try await ledger.recordLearnedPrice(Self.signed("nowhere")) == .notRecorded)
            await #expect(throws: LedgerError.self) {
                try await ledger.recordLearnedPrice(makeTransaction("u2", item: .face(3), unpriced: true))
            }
            #expect(try await ledgerRowCounts(db.client) == before)
        }
    }

    @Test(
        "refunded before its price is learned: the price entry books revenue and the refund; a reversal then posts it")
    func refundBeforePrice() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("u3", item: .face(3), unpriced: true), for: "alice")
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "u3", second: 10))
                    == .applied(.refunded))
            #expect(try await balances(db.client).isEmpty)

            _ = try await ledger.recordLearnedPrice(Self.signed("u3"))
            #expect(try await Self.entryKinds(db.client, "u3") == ["purchase", "refund", "price_learned"])
            #expect(try await balances(db.client) == ["revenue:face": -2_500_000, "refunds:face": 2_500_000])
            #expect(try await ledger.purchaseHistory(of: "alice").first?.state == .refunded)
            #expect(try await ledger.inventory(of: "alice").faces == [0])

            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e2", .refundReversal, for: "u3", second: 20))
                    == .applied(.live))
            #expect(
                try await balances(db.client) == ["receivable:app_store": 2_500_000, "revenue:face": -2_500_000])
            #expect(try await ledger.inventory(of: "alice").faces == [0, 3])
        }
    }

    @Test("refunded after its price is learned: the refund posts the learned price")
    func refundAfterPrice() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(
                makeTransaction("u4", item: .background(2), unpriced: true), for: "alice")
            _ = try await ledger.recordLearnedPrice(Self.signed("u4", item: .background(2), price: 1_200_000))
            #expect(
                try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "u4", second: 10))
                    == .applied(.refunded))
            #expect(try await Self.entryKinds(db.client, "u4") == ["purchase", "price_learned", "refund"])
            #expect(
                try await balances(db.client) == ["revenue:background": -1_200_000, "refunds:background": 1_200_000])
            #expect(try await ledger.purchaseHistory(of: "alice").first?.state == .refunded)
        }
    }

    @Test("eight syncs at once, beside a refund: one price entry, the rest duplicates, the money right")
    func concurrentPricing() async throws {
        try await withLedger { db, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("u7", item: .face(3), unpriced: true), for: "alice")
            let outcomes = try await withThrowingTaskGroup(of: PriceOutcome?.self) { group in
                for _ in 0..<8 { group.addTask { try await ledger.recordLearnedPrice(Self.signed("u7")) } }
                group.addTask {
                    _ = try await ledger.recordRefundEvent(makeRefundEvent("e1", .refund, for: "u7", second: 10))
                    return nil
                }
                return try await group.reduce(into: [PriceOutcome]()) { if let outcome = $1 { $0.append(outcome) } }
            }
            let price = Money(amountMilli: 2_500_000, currency: "KRW")
            #expect(outcomes.filter { $0 == .recorded(price) }.count == 1)
            #expect(outcomes.filter { $0 == .duplicate(price) }.count == 7)
            #expect(
                try await scalar(db.client, "SELECT count(*) FROM journal_entries WHERE kind = 'price_learned'") == 1)
            #expect(try await balances(db.client) == ["revenue:face": -2_500_000, "refunds:face": 2_500_000])
        }
    }

    @Test("the reconciler finds a learned price whose entry posts another amount, and a price entry without its price")
    func reconcilerCatchesBadPriceEntries() async throws {
        try await withTestDatabase { db in
            let ledger = LedgerStore(client: db.client)
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("u5", item: .face(3), unpriced: true), for: "alice")
            _ = try await ledger.recordPurchase(makeTransaction("u6", item: .face(4), unpriced: true), for: "alice")
            _ = try await ledger.recordLearnedPrice(Self.signed("u5"))
            // A hand-written price entry for u6 that books revenue with no learned price behind it.
            try await db.client.query(
                """
                WITH entry AS (
                    INSERT INTO journal_entry_rows (store, environment, transaction_id, seq, kind, uid, book, effective_at)
                    VALUES ('app_store', 'Production', 'u6', 1, 'price_learned', 'alice', 'production', now())
                    RETURNING transaction_id, entry_id
                )
                INSERT INTO posting_rows (transaction_id, entry_id, leg, account, currency, amount_milli)
                SELECT transaction_id, entry_id, v.leg, v.account, 'KRW', v.amount FROM entry
                CROSS JOIN (VALUES (1, 'receivable:app_store', 900), (2, 'revenue:face', -900)) AS v (leg, account, amount)
                """)
            let report = try await Reconciler(client: db.client).run()
            let failed = Set(report.checks.filter { !$0.passed }.map(\.name))
            #expect(
                failed == ["learned_prices_booked", "entry_postings_match_purchase", "receivable_matches_purchases"])
        }
    }
}
