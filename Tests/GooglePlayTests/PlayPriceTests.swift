import Foundation
import GooglePlay
import HTTPTypes
import Ledger
import Postgres
import Receipts
import Shop
import ShopServer
import TestSupport
import Testing

/// What a Play purchase's buyer was charged, learned from Google's Orders API as the ledger learns an App
/// Store purchase's price later (a `price_learned` entry), against the fake Google and a real PostgreSQL.
@Suite("Google Play prices")
struct PlayPriceTests {
    static let krw1200 = FakeGooglePlay.Money("KRW", units: 1200)

    @Test("a new purchase is priced in its request from its order: a price_learned entry books the revenue")
    func pricedInRequest() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.1", charged: Self.krw1200))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            let answer = try await client.playPurchase("alice", token: "tok-a")
            #expect(answer.status == .ok, "\(answer.body)")
            #expect(try await Self.learned(db, "GPA.1") == "1200000 KRW")
            #expect(
                try await Self.balances(db) == ["receivable:google_play": 1_200_000, "revenue:face": -1_200_000])
            #expect(fake.requests.filter { $0.path.hasSuffix("/orders/GPA.1") }.count == 1)
            // A duplicate post asks Google for the purchase again, never for its order, and books nothing.
            #expect(try await client.playPurchase("alice", token: "tok-a").json["duplicate"] as? Bool == true)
            #expect(fake.requests.filter { $0.path.contains("/orders") }.count == 1)
            #expect(try await count(db, "SELECT count(*) FROM journal_entries WHERE kind = 'price_learned'") == 1)
            let report = try await Reconciler(client: db.client).run()
            #expect(report.passed, "\(report.text)")
        }
    }

    @Test(
        "an order Google does not answer in the request's time leaves the purchase unpriced; the sync prices it once",
        .timeLimit(.minutes(1)))
    func slowOrderThenSync() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.1", charged: Self.krw1200))
        fake.scriptOrders(.hang(.seconds(120)))
        // The suite's time limit is under the hang: a purchase that waited for the order would fail it.
        try await withPlayServer(fake, configure: { $0.googlePlay?.priceBudget = .milliseconds(300) }) {
            client, db, settings in
            try await client.register("alice")
            let answer = try await client.playPurchase("alice", token: "tok-a")
            #expect(answer.status == .ok, "\(answer.body)")
            #expect(try await client.ownedFaces("alice").contains(2))
            #expect(try await Self.learned(db, "GPA.1") == nil)
            #expect(try await count(db, "SELECT count(*) FROM purchases WHERE price_milli IS NULL") == 1)

            let synchronizer = try Self.synchronizer(db, settings)
            let report = try await synchronizer.sync(since: Date())
            #expect(report.unpricedChecked == 1 && report.pricesLearned == 1 && report.pricesMissing == 0, "\(report)")
            #expect(try await Self.learned(db, "GPA.1") == "1200000 KRW")
            #expect(
                fake.requests.contains { $0.path.hasSuffix("/orders:batchGet") && $0.query.contains("orderIds=GPA.1") })
            let again = try await synchronizer.sync(since: Date())
            #expect(again.unpricedChecked == 0 && again.pricesLearned == 0, "\(again)")
            #expect(try await count(db, "SELECT count(*) FROM journal_entries WHERE kind = 'price_learned'") == 1)
        }
    }

    @Test("a batch with an order Google does not know is asked one by one; the unknown one backs off")
    func batchWithUnknownOrder() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.1"))
        fake.add(.init(productId: "background1", token: "tok-b", orderId: "GPA.2"))
        try await withPlayServer(fake) { client, db, settings in
            try await client.register("alice")
            #expect(try await client.playPurchase("alice", token: "tok-a").status == .ok)
            #expect(try await client.playPurchase("alice", token: "tok-b", productId: "background1").status == .ok)
            // Google's orders appear for one of the two only.
            fake.update("tok-b") { $0.charged = FakeGooglePlay.Money("KRW", units: 3300) }
            let synchronizer = try Self.synchronizer(db, settings)
            let before = fake.requests.count
            let report = try await synchronizer.sync(since: Date())
            #expect(report.unpricedChecked == 2 && report.pricesLearned == 1 && report.pricesMissing == 1, "\(report)")
            let asked = fake.requests.dropFirst(before).map(\.path).filter { $0.contains("/orders") }
            #expect(asked.count == 3 && asked[0].hasSuffix("/orders:batchGet"), "\(asked)")
            #expect(try await Self.learned(db, "GPA.2") == "3300000 KRW")
            #expect(try await Self.learned(db, "GPA.1") == nil)
            let noted = try await db.client.query(
                "SELECT attempts, last_outcome FROM price_lookups WHERE store = 'google_play' AND transaction_id = 'GPA.1'"
            ).single().decode((Int, String).self)
            #expect(noted.0 == 1 && noted.1.contains("no order"), "\(noted)")
            // Backing off: the next run does not ask about it.
            let next = try await synchronizer.sync(since: Date())
            #expect(next.unpricedChecked == 0, "\(next)")
        }
    }

    @Test("an order not charged, of another product or of a fraction of a milliunit books nothing: never guessed")
    func ordersThatDoNotPrice() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.1", charged: Self.krw1200))
        fake.add(.init(productId: "background1", token: "tok-b", orderId: "GPA.2", charged: Self.krw1200))
        fake.add(
            .init(
                productId: "sprout2", token: "tok-c", orderId: "GPA.3",
                charged: FakeGooglePlay.Money("USD", units: 0, nanos: 990_500_000)))
        fake.update("tok-a") { $0.orderState = "PENDING" }
        fake.update("tok-b") { $0.orderProductId = "sprout2" }
        try await withPlayServer(fake) { client, db, settings in
            for (uid, token, product) in [
                ("alice", "tok-a", "sprout2"), ("bob", "tok-b", "background1"), ("carol", "tok-c", "sprout2"),
            ] {
                try await client.register(uid)
                #expect(try await client.playPurchase(uid, token: token, productId: product).status == .ok)
            }
            #expect(try await count(db, "SELECT count(*) FROM purchase_prices") == 0)
            let report = try await Self.synchronizer(db, settings).sync(since: Date())
            #expect(report.unpricedChecked == 3 && report.pricesLearned == 0 && report.pricesMissing == 3, "\(report)")
            #expect(try await count(db, "SELECT count(*) FROM purchase_prices") == 0)
            #expect(try await count(db, "SELECT count(*) FROM posting_rows") == 0)
            let outcomes = try await db.client.query(
                "SELECT transaction_id::text, last_outcome FROM price_lookups ORDER BY transaction_id"
            ).map { try $0.decode((String, String).self) }
            #expect(outcomes.map(\.0) == ["GPA.1", "GPA.2", "GPA.3"])
            #expect(outcomes[0].1.contains("PENDING") && outcomes[1].1.contains("another product"), "\(outcomes)")
            #expect(outcomes[2].1.contains("exact amount"), "\(outcomes)")
        }
    }

    @Test("a purchase refunded before its price is learned: the price books the revenue and the refund, net zero")
    func refundedBeforePriced() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.1"))
        try await withPlayServer(fake) { client, db, settings in
            try await client.register("alice")
            #expect(try await client.playPurchase("alice", token: "tok-a").status == .ok)
            fake.void("tok-a")
            fake.update("tok-a") { $0.charged = PlayPriceTests.krw1200 }
            let report = try await Self.synchronizer(db, settings).sync(since: Date().addingTimeInterval(-3600))
            #expect(report.refundsApplied == 1 && report.pricesLearned == 1, "\(report)")
            #expect(try await Self.learned(db, "GPA.1") == "1200000 KRW")
            #expect(
                try await Self.balances(db) == ["revenue:face": -1_200_000, "refunds:face": 1_200_000])
            let reconciled = try await Reconciler(client: db.client).run()
            #expect(reconciled.passed, "\(reconciled.text)")
        }
    }

    @Test("Google's money: exact milliunits or nothing; an order prices only its own charged, single line")
    func moneyAndCharge() throws {
        #expect(GoogleMoney(currencyCode: "KRW", units: 1200).milliunits == 1_200_000)
        #expect(GoogleMoney(currencyCode: "USD", units: 0, nanos: 990_000_000).milliunits == 990)
        #expect(GoogleMoney(currencyCode: "USD", units: -1, nanos: -750_000_000).milliunits == -1750)
        #expect(GoogleMoney(currencyCode: "USD", units: 0, nanos: 990_500_000).milliunits == nil)
        #expect(GoogleMoney(currencyCode: "USD", units: 1, nanos: -1_000_000).milliunits == nil)
        #expect(GoogleMoney(currencyCode: "USD", units: .max / 10).milliunits == nil)
        let decoded = try JSONDecoder().decode(
            PlayOrder.self,
            from: Data(
                #"""
                {"orderId": "GPA.9", "purchaseToken": "tok", "state": "PROCESSED",
                 "lineItems": [{"productId": "sprout2", "total": {"currencyCode": "EUR", "units": "2", "nanos": 490000000},
                                "oneTimePurchaseDetails": {"quantity": 1}}],
                 "total": {"currencyCode": "EUR", "units": "2", "nanos": 490000000}}
                """#.utf8))
        #expect(
            try decoded.charge(for: "sprout2", token: "tok").get()
                == PlayOrder.Charge(milliunits: 2490, currency: "EUR"))
        #expect((try? decoded.charge(for: "sprout2", token: "other").get()) == nil)
        #expect((try? decoded.charge(for: "background1", token: "tok").get()) == nil)
        var refunded = decoded
        refunded.stateValue = "REFUNDED"
        #expect((try? refunded.charge(for: "sprout2", token: "tok").get()) != nil)
        for state in ["PENDING", "CANCELED", "STATE_UNSPECIFIED", "SOMETHING_NEW"] {
            var order = decoded
            order.stateValue = state
            #expect((try? order.charge(for: "sprout2", token: "tok").get()) == nil, "\(state)")
        }
        var two = decoded
        two.lineItems.append(two.lineItems[0])
        #expect((try? two.charge(for: "sprout2", token: "tok").get()) == nil)
        var many = decoded
        many.lineItems[0].oneTimePurchaseDetails?.quantity = 3
        #expect((try? many.charge(for: "sprout2", token: "tok").get()) == nil)
    }

    // MARK: Support

    static func synchronizer(_ db: TestDatabase, _ settings: GooglePlaySettings) throws -> GooglePlaySynchronizer {
        GooglePlaySynchronizer(
            client: try GooglePlayClient(configuration: settings.api, logger: PlayTest.quietLogger),
            ledger: LedgerStore(client: db.client, logger: PlayTest.quietLogger), logger: PlayTest.quietLogger)
    }

    /// The price learned for the Play purchase `transactionId`, as "milliunits CURRENCY".
    static func learned(_ db: TestDatabase, _ transactionId: String) async throws -> String? {
        try await db.client.query(
            """
            SELECT price_milli || ' ' || currency FROM purchase_prices
            WHERE store = 'google_play' AND transaction_id = \(transactionId)::text
            """
        ).first?.decode(String.self, at: 0)
    }

    /// Non-zero balances of the ledger's KRW accounts.
    static func balances(_ db: TestDatabase) async throws -> [String: Int] {
        var result: [String: Int] = [:]
        for row in try await db.client.query(
            "SELECT account, sum(amount_milli) FROM postings WHERE currency = 'KRW' GROUP BY account HAVING sum(amount_milli) <> 0"
        ) {
            let (account, amount) = try row.decode((String, Int).self)
            result[account] = amount
        }
        return result
    }
}
