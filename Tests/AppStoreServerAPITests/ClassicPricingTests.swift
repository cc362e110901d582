import AppStoreServerAPI
import CivilDates
import Foundation
import HTTPTypes
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import Reports
import TestSupport
import Testing

@testable import Shop
@testable import ShopServer

/// A classic app receipt carries no price: when the App Store Server API answers, the purchase is
/// recorded with Apple's signed price, currency and storefront; when it does not, unpriced, and a
/// later sync (or a re-post while Apple answers) books the price as a new ledger event.
@Suite("AppStoreServerAPI prices classic receipts")
struct ClassicPricingTests {
    static let purchaseDate = "2026-11-01T09:30:00Z"
    /// Apple's signed transaction carries milliseconds; the classic receipt only seconds.
    static let purchaseMs = Int64(ISO8601DateFormatter().date(from: purchaseDate)!.timeIntervalSince1970) * 1000 + 123

    static func receipt(_ entries: [(product: String, transaction: String)]) -> String {
        TestReceiptPKI.shared.receipt(
            TestReceipt(
                bundleId: APITest.bundleId,
                purchases: entries.map {
                    TestReceipt.Purchase(
                        productId: $0.product, transactionId: $0.transaction, purchaseDate: purchaseDate)
                }))
    }

    /// A shop whose App Store Server API is the fake, `alice` registered; `body` gets the test client,
    /// the database and an API client of its own (for syncs). The ledger's invariants and the report
    /// totals are checked afterwards.
    func withShop(
        _ fake: FakeAppStore, label: String = #function,
        _ body: @escaping @Sendable (any TestClientProtocol, TestDatabase, AppStoreServerAPIClient) async throws -> Void
    ) async throws {
        try await fake.run { production, sandbox in
            let settings = APITest.configuration(fake, production: production, sandbox: sandbox)
            let configuration = ServerConfiguration(
                auth: AuthConfiguration(acceptsDevelopmentTokens: true),
                receipts: VerifierConfiguration(
                    bundleId: APITest.bundleId, rootCertificates: [APITest.pki.rootCertificate],
                    receiptRootCertificates: [TestReceiptPKI.shared.rootCertificate]),
                appStoreAPI: settings)
            try await withTestDatabase(label) { db in
                _ = try await LedgerStore(client: db.client).register(
                    uid: "alice", profile: try UserProfile(json: #"{"nick":"새싹"}"#))
                let app = try buildApplication(
                    configuration: configuration, client: db.client, logger: APITest.quietLogger)
                let api = try APITest.client(settings)
                try await app.test(.router) { client in
                    try await body(client, db, api)
                    // Inside: the application stops the database client when it shuts down.
                    let report = try await Reconciler(
                        client: db.client, checks: LedgerInvariants.all + [ReportTotalsCheck()]
                    ).run()
                    #expect(report.passed, "ledger invariants: \(report.text)")
                }
            }
        }
    }

    /// Apple knows two purchases of customer x, faces 3 (₩3,300) and 4 (₩2,500); one receipt holds both.
    static func twoFaces(_ face3Id: String, _ face4Id: String) -> (FakeAppStore, receipt: String) {
        let fake = APITest.fake()
        fake.add(
            FakeAppStore.Transaction(
                id: face3Id, productId: APITest.product(3), customer: "x", purchaseMs: purchaseMs, price: 3_300_000))
        fake.add(
            FakeAppStore.Transaction(
                id: face4Id, productId: APITest.product(4), customer: "x", purchaseMs: purchaseMs, price: 2_500_000))
        return (fake, receipt([(APITest.product(3), face3Id), (APITest.product(4), face4Id)]))
    }

    /// Apple's next three answers are 500s: a purchase's price lookup fails (the client retries twice).
    /// Under load the request's budget can end before the third is taken: a test clears what is left
    /// (`clearFaults()`) after the post, so a fault scripted for it never reaches the next step.
    static func failThrice(_ fake: FakeAppStore) {
        fake.script(.status(500, errorCode: nil), .status(500, errorCode: nil), .status(500, errorCode: nil))
    }

    static func entryKinds(_ db: TestDatabase, _ transactionId: String) async throws -> [String] {
        try await db.client.query(
            "SELECT kind FROM journal_entries WHERE transaction_id = \(transactionId)::text ORDER BY seq"
        ).map { try $0.decode(String.self, at: 0) }
    }

    static func post(_ client: any TestClientProtocol, receipt: String, product: String) async throws -> ShopAnswer {
        try await client.api(
            .post, "/api/v1/purchases", uid: "alice", json: ["receipt": receipt, "productId": product])
    }

    @Test(
        "Priced with Apple's signed price; again a duplicate, also while Apple fails; unpriced when Apple fails first")
    func classicReceiptGetsItsPrice() async throws {
        let (fake, receipt) = Self.twoFaces("c-200", "c-201")
        let face3 = APITest.product(3)
        let face4 = APITest.product(4)
        try await withShop(fake) { client, db, _ in
            let first = try await Self.post(client, receipt: receipt, product: face3)
            #expect(first.status == .ok, "\(first.body)")
            let purchase = first.json["purchase"] as? [String: Any]
            let price = purchase?["price"] as? [String: Any]
            #expect(price?["amountMilli"] as? Int == 3_300_000 && price?["currency"] as? String == "KRW")
            #expect(purchase?["storefront"] as? String == "KOR")
            // One entry priced: Get Transaction Info, one request.
            #expect(fake.requests.map(\.path) == ["/inApps/v1/transactions/c-200"])

            let again = try await Self.post(client, receipt: receipt, product: face3)
            #expect(again.status == .ok && again.json["duplicate"] as? Bool == true, "\(again.body)")

            // Apple failing now: a duplicate of a priced purchase is answered from the ledger, Apple not asked.
            fake.script(.status(500, errorCode: nil), .status(500, errorCode: nil), .status(500, errorCode: nil))
            let offline = try await Self.post(client, receipt: receipt, product: face3)
            #expect(offline.status == .ok && offline.json["duplicate"] as? Bool == true, "\(offline.body)")
            #expect(fake.requests.map(\.path) == ["/inApps/v1/transactions/c-200"], "no call for a priced duplicate")
            fake.clearFaults()

            // Apple failing at the first post: recorded unpriced. A later post while Apple answers is a
            // duplicate that books Apple's price as a new entry; the purchase row keeps no price.
            Self.failThrice(fake)
            let unpriced = try await Self.post(client, receipt: receipt, product: face4)
            fake.clearFaults()
            #expect(unpriced.status == .ok, "\(unpriced.body)")
            #expect((unpriced.json["purchase"] as? [String: Any])?["price"] is NSNull)
            let later = try await Self.post(client, receipt: receipt, product: face4)
            #expect(later.json["duplicate"] as? Bool == true)
            let laterPrice = (later.json["purchase"] as? [String: Any])?["price"] as? [String: Any]
            #expect(laterPrice?["amountMilli"] as? Int == 2_500_000, "\(later.body)")
            #expect(try await Self.entryKinds(db, "c-201") == ["purchase", "price_learned"])
            let thirdPost = try await Self.post(client, receipt: receipt, product: face4)
            #expect(thirdPost.json["duplicate"] as? Bool == true)
            #expect(try await Self.entryKinds(db, "c-201") == ["purchase", "price_learned"])
            #expect(
                try await db.client.query("SELECT count(*) FROM purchases WHERE price_milli IS NULL").single()
                    .decode(Int.self, at: 0) == 1)
        }
    }

    @Test("A whole receipt posted at once: every entry priced by one request for the customer's history")
    func wholeReceiptPricedByOneCall() async throws {
        let (fake, receipt) = Self.twoFaces("c-600", "c-601")
        try await withShop(fake) { client, _, _ in
            let answer = try await client.api(.post, "/api/v1/purchases", uid: "alice", json: ["receipt": receipt])
            #expect(answer.status == .ok, "\(answer.body)")
            var prices: [String: Int] = [:]
            for entry in answer.json["entries"] as? [[String: Any]] ?? [] {
                let price = (entry["purchase"] as? [String: Any])?["price"] as? [String: Any]
                prices[entry["transactionId"] as? String ?? ""] = price?["amountMilli"] as? Int
            }
            #expect(prices == ["c-600": 3_300_000, "c-601": 2_500_000], "\(answer.body)")
            #expect(fake.requests.map(\.path) == ["/inApps/v2/history/c-600"])
        }
    }

    @Test("Duplicates of a whole classic receipt, one after another and several at once, ask Apple once")
    func duplicatesAskAppleOnce() async throws {
        let (fake, receipt) = Self.twoFaces("c-700", "c-701")
        try await withShop(fake) { client, _, _ in
            for _ in 0..<10 {
                let answer = try await client.api(.post, "/api/v1/purchases", uid: "alice", json: ["receipt": receipt])
                #expect(answer.status == .ok, "\(answer.body)")
            }
            for product in [APITest.product(3), APITest.product(4)] {
                #expect(try await Self.post(client, receipt: receipt, product: product).status == .ok)
            }
            // As many at once as one user may have proofs in flight, five times over.
            for _ in 0..<5 {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<UserLimits.proofsInFlight {
                        group.addTask {
                            let answer = try await client.api(
                                .post, "/api/v1/purchases", uid: "alice", json: ["receipt": receipt])
                            #expect(answer.status == .ok, "\(answer.body)")
                        }
                    }
                    try await group.waitForAll()
                }
            }
            #expect(fake.requests.map(\.path) == ["/inApps/v2/history/c-700"], "the entries are the ledger's now")
        }
    }

    @Test("A receipt nobody has recorded, posted at once as often as a user may: one call to Apple, every post priced")
    func concurrentFirstPostsShareOneCall() async throws {
        let (fake, receipt) = Self.twoFaces("c-800", "c-801")
        try await withShop(fake) { client, _, _ in
            let prices = try await withThrowingTaskGroup(of: [Int?].self) { group in
                for _ in 0..<UserLimits.proofsInFlight {
                    group.addTask {
                        let answer = try await client.api(
                            .post, "/api/v1/purchases", uid: "alice", json: ["receipt": receipt])
                        return (answer.json["entries"] as? [[String: Any]] ?? []).map {
                            (($0["purchase"] as? [String: Any])?["price"] as? [String: Any])?["amountMilli"] as? Int
                        }
                    }
                }
                return try await group.reduce(into: [[Int?]]()) { $0.append($1) }
            }
            #expect(prices.allSatisfy { $0 == [3_300_000, 2_500_000] }, "\(prices)")
            #expect(fake.requests.map(\.path) == ["/inApps/v2/history/c-800"])
        }
    }

    @Test("Recorded unpriced while Apple is down; a restore later books Apple's price once, as a new entry")
    func restorePricesIt() async throws {
        let (fake, receipt) = Self.twoFaces("c-400", "c-401")
        try await withShop(fake) { client, db, _ in
            Self.failThrice(fake)
            let unpriced = try await Self.post(client, receipt: receipt, product: APITest.product(3))
            fake.clearFaults()
            #expect((unpriced.json["purchase"] as? [String: Any])?["price"] is NSNull, "\(unpriced.body)")
            let restored = try await client.restore(uid: "alice", transactionId: "c-400")
            #expect(restored.outcomes == ["c-400": "duplicate", "c-401": "recorded"], "\(restored.body)")
            #expect(try await Self.entryKinds(db, "c-400") == ["purchase", "price_learned"])
            #expect(try await Self.entryKinds(db, "c-401") == ["purchase"])
            let again = try await client.restore(uid: "alice", transactionId: "c-400")
            #expect(again.outcomes == ["c-400": "duplicate", "c-401": "duplicate"])
            #expect(try await Self.entryKinds(db, "c-400") == ["purchase", "price_learned"])
        }
    }

    @Test(
        "Recorded unpriced while Apple is down; a sync prices it as a new ledger event, once; a forged answer writes nothing"
    )
    func laterSyncPricesIt() async throws {
        let (fake, receipt) = Self.twoFaces("c-300", "c-301")
        let face3 = APITest.product(3)
        let face4 = APITest.product(4)
        try await withShop(fake) { client, db, api in
            let ledger = LedgerStore(client: db.client)
            for product in [face3, face4] {
                Self.failThrice(fake)
                let answer = try await Self.post(client, receipt: receipt, product: product)
                fake.clearFaults()
                #expect(answer.status == .ok, "\(answer.body)")
                #expect((answer.json["purchase"] as? [String: Any])?["price"] is NSNull, "\(answer.body)")
            }
            // Owned, no revenue.
            #expect(try await ledger.inventory(of: "alice").faces == [0, 3, 4])
            #expect(try await db.client.query("SELECT count(*) FROM postings").single().decode(Int.self, at: 0) == 0)
            // c-301 is refunded while still unpriced: its refund posts nothing.
            let refund = RefundEvent(
                sourceEventId: "refund-c-301", kind: .refund, store: .appStore, environment: .production,
                transactionId: "c-301", signedDate: Date().addingTimeInterval(-60), revocationReason: 0,
                evidenceSHA256: Array(repeating: 7, count: 32))
            #expect(try await ledger.recordRefundEvent(refund) == .applied(.refunded))
            #expect(try await db.client.query("SELECT count(*) FROM postings").single().decode(Int.self, at: 0) == 0)

            let synchronizer = AppStoreSynchronizer(api: api, ledger: ledger, logger: APITest.quietLogger)
            // Apple's answer for c-300 (recorded first, asked first) is forged: refused, nothing written for it.
            fake.resetRequests()
            fake.script(.forgedSignature)
            var forged = AppStoreSynchronizer.Report()
            try await synchronizer.syncPrices(into: &forged)
            #expect(forged.unpricedChecked == 2 && forged.pricesLearned == 1 && forged.failures == 1, "\(forged)")
            #expect(fake.requests.map(\.path) == ["/inApps/v1/transactions/c-300", "/inApps/v1/transactions/c-301"])
            #expect(try await ledger.unpricedPurchases(limit: 10).map(\.transactionId) == ["c-300"])
            #expect(try await Self.entryKinds(db, "c-300") == ["purchase"])
            // c-301, refunded before its price was known: revenue and the refund, net zero.
            #expect(try await Self.entryKinds(db, "c-301") == ["purchase", "refund", "price_learned"])

            // c-300 waits out its back-off after the forged answer; the next run, once it has, prices it.
            var early = AppStoreSynchronizer.Report()
            try await synchronizer.syncPrices(into: &early)
            #expect(early.unpricedChecked == 0, "\(early)")
            let afterBackoff = AppStoreSynchronizer(
                api: api, ledger: ledger, logger: APITest.quietLogger,
                now: { Date().addingTimeInterval(PriceLookupBackoff.first + 1) })
            let since = Date().addingTimeInterval(-3_600)
            let first = try await afterBackoff.sync(since: since)
            #expect(first.unpricedChecked == 1 && first.pricesLearned == 1 && first.failures == 0, "\(first)")
            #expect(try await Self.entryKinds(db, "c-300") == ["purchase", "price_learned"])
            let rows = try await ledgerRowCounts(db.client)
            let second = try await afterBackoff.sync(since: since)
            #expect(second.unpricedChecked == 0 && second.pricesLearned == 0 && second.failures == 0, "\(second)")
            #expect(try await ledgerRowCounts(db.client) == rows)
            // Never an update: the purchase rows still carry no price; the price is in the entries.
            #expect(
                try await db.client.query("SELECT count(*) FROM purchases WHERE price_milli IS NULL").single()
                    .decode(Int.self, at: 0) == 2)
            let history = try await ledger.purchaseHistory(of: "alice")
            #expect(history.map(\.price?.amountMilli) == [3_300_000, 2_500_000])
            #expect(history.map(\.state) == [.live, .refunded])

            // Today's report (the prices were signed now) counts both as revenue, and c-301's refund.
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withFullDate]
            let today = try #require(CalendarDate(formatter.string(from: Date())))
            let report = try await RevenueReporter(client: db.client).daily(date: today)
            let total = report.whole.total(book: "production", currency: "KRW")
            #expect(total.purchases == 2 && total.grossMilli == 5_800_000, "\(total)")
            #expect(total.refunds == 1 && total.refundedMilli == 2_500_000 && total.netMilli == 3_300_000)
            #expect(report.reconciled)
        }
    }
}
