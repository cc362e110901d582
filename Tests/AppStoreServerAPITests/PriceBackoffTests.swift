import AppStoreServerAPI
import Foundation
import HTTPTypes
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Shop
@testable import ShopServer

/// A purchase Apple does not price (it does not know the transaction, or its answer states no price)
/// must not be asked again by every sync: a run asks at most `priceLimit` purchases, so a handful of
/// such purchases recorded first would starve every newer unpriced purchase forever.
@Suite("AppStoreServerAPI price lookups back off")
struct PriceBackoffTests {
    @Test("Purchases Apple cannot price wait before they are asked again; newer ones are priced meanwhile")
    func unpriceablePurchasesDoNotStarveNewerOnes() async throws {
        // Apple knows c-502 only; c-500 and c-501, recorded before it, it has never heard of.
        let fake = APITest.fake()
        fake.add(
            FakeAppStore.Transaction(
                id: "c-502", productId: APITest.product(2), customer: "x",
                purchaseMs: ClassicPricingTests.purchaseMs, price: 1_200_000))
        let entries = [(APITest.product(3), "c-500"), (APITest.product(4), "c-501"), (APITest.product(2), "c-502")]
        let receipt = ClassicPricingTests.receipt(entries.map { (product: $0.0, transaction: $0.1) })
        try await ClassicPricingTests().withShop(fake) { client, db, api in
            for (product, transaction) in entries {
                ClassicPricingTests.failThrice(fake)
                let answer = try await ClassicPricingTests.post(client, receipt: receipt, product: product)
                fake.clearFaults()
                #expect(answer.status == .ok, "\(transaction): \(answer.body)")
            }
            let ledger = LedgerStore(client: db.client)
            #expect(try await ledger.unpricedPurchases(limit: 10).map(\.transactionId) == ["c-500", "c-501", "c-502"])
            // This test moves the back-off's clock, not the real one the client remembers "not found" by.
            var settings = api.configuration
            settings.notFoundMemory = .zero
            let api = try APITest.client(settings)
            let synchronizer = AppStoreSynchronizer(
                api: api, ledger: ledger, logger: APITest.quietLogger, priceLimit: 2)

            // The first run asks the two recorded first; Apple knows neither.
            fake.resetRequests()
            var first = AppStoreSynchronizer.Report()
            try await synchronizer.syncPrices(into: &first)
            #expect(first.unpricedChecked == 2 && first.pricesLearned == 0 && first.failures == 2, "\(first)")
            #expect(fake.requests.map(\.path) == ["/inApps/v1/transactions/c-500", "/inApps/v1/transactions/c-501"])

            // The next run, right after: the two wait out their back-off, c-502 gets its turn and its price.
            fake.resetRequests()
            var second = AppStoreSynchronizer.Report()
            try await synchronizer.syncPrices(into: &second)
            #expect(second.unpricedChecked == 1 && second.pricesLearned == 1 && second.failures == 0, "\(second)")
            #expect(fake.requests.map(\.path) == ["/inApps/v1/transactions/c-502"])
            #expect(try await ClassicPricingTests.entryKinds(db, "c-502") == ["purchase", "price_learned"])
            #expect(try await Self.lookups(db) == ["c-500": 1, "c-501": 1])

            // Once their back-off has run out they are asked again, and the next wait is twice as long.
            let later = Date().addingTimeInterval(PriceLookupBackoff.first + 1)
            let laterRun = AppStoreSynchronizer(
                api: api, ledger: ledger, logger: APITest.quietLogger, priceLimit: 2, now: { later })
            fake.resetRequests()
            var third = AppStoreSynchronizer.Report()
            try await laterRun.syncPrices(into: &third)
            #expect(third.unpricedChecked == 2 && third.pricesLearned == 0 && third.failures == 2, "\(third)")
            #expect(fake.requests.map(\.path) == ["/inApps/v1/transactions/c-500", "/inApps/v1/transactions/c-501"])
            #expect(try await Self.lookups(db) == ["c-500": 2, "c-501": 2])
            let waits = try await db.client.query(
                "SELECT extract(epoch FROM next_attempt_at - last_attempt_at)::float8 FROM price_lookups"
            ).map { try $0.decode(Double.self, at: 0) }
            #expect(waits == [2 * PriceLookupBackoff.first, 2 * PriceLookupBackoff.first], "\(waits)")
            var fourth = AppStoreSynchronizer.Report()
            try await laterRun.syncPrices(into: &fourth)
            #expect(fourth.unpricedChecked == 0, "\(fourth)")
        }
    }

    static func lookups(_ db: TestDatabase) async throws -> [String: Int] {
        let rows = try await db.client.query("SELECT transaction_id::text, attempts FROM price_lookups")
        return try Dictionary(uniqueKeysWithValues: rows.map { try $0.decode((String, Int).self) })
    }
}
