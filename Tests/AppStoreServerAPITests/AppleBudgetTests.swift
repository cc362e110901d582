import AppStoreServerAPI
import Foundation
import HTTPTypes
import HummingbirdTesting
import Ledger
import NIOCore
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Shop
@testable import ShopServer

/// A call to Apple made inside a request gets the time the request has left, never Apple's whole retry
/// policy: a slow or rate-limiting Apple costs a price (recorded unpriced, priced by a later sync) or a
/// restore (503 `app_store_unavailable`), never the purchase itself.
@Suite("AppStoreServerAPI uses: calls inside a request fit its time")
struct AppleBudgetTests {
    typealias Transaction = FakeAppStore.Transaction

    /// The client's production patience (15 s per attempt, 4 attempts, Retry-After waited up to 30 s) in
    /// a server whose requests get 3 s.
    static func patientApple(_ configuration: inout ServerConfiguration) {
        configuration.requestTimeout = .seconds(3)
        configuration.appStoreAPI?.requestTimeout = .seconds(15)
        configuration.appStoreAPI?.maxAttempts = 4
        configuration.appStoreAPI?.maxRetryWait = .seconds(30)
        configuration.appStoreAPI?.initialBackoff = .milliseconds(500)
    }

    static func shop() -> FakeAppStore {
        let fake = APITest.fake()
        for (index, id) in ["b-1", "b-2", "b-3"].enumerated() {
            fake.add(
                Transaction(
                    id: id, productId: APITest.product(index + 2), customer: "alice-apple",
                    purchaseMs: 1_763_000_000_000 + Int64(index) * 1000, price: 3_300_000))
        }
        return fake
    }

    static let receipt = TestReceiptPKI.shared.receipt(
        TestReceipt(
            bundleId: APITest.bundleId,
            purchases: ["b-1", "b-2", "b-3"].enumerated().map { index, id in
                TestReceipt.Purchase(
                    productId: APITest.product(index + 2), transactionId: id,
                    purchaseDate: ISO8601DateFormatter().string(
                        from: Date(timeIntervalSince1970: 1_763_000_000 + Double(index))))
            }))

    /// The shipped app's purchase: `POST /v1/user/shop/ios`, a form with the classic receipt.
    static func sesacPurchase(_ client: any TestClientProtocol, product: String) async throws -> ShopAnswer {
        var form = URLComponents()
        form.queryItems = [
            URLQueryItem(name: "receipt", value: receipt), URLQueryItem(name: "product", value: product),
        ]
        let encoded = (form.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        var headers: HTTPFields = [HTTPField.Name("idtoken")!: "dev:alice"]
        headers[.contentType] = "application/x-www-form-urlencoded"
        return try await client.execute(
            uri: "/v1/user/shop/ios", method: .post, headers: headers, body: ByteBuffer(string: encoded)
        ) { response in
            ShopAnswer(status: response.status, headers: response.headers, body: String(buffer: response.body))
        }
    }

    static func unpriced(_ db: TestDatabase) async throws -> [String] {
        try await db.client.query("SELECT transaction_id FROM purchases WHERE price_milli IS NULL ORDER BY 1").map {
            try $0.decode(String.self, at: 0)
        }
    }

    /// `patientApple` with 8 s per request: the price budget (3 s) cuts Apple's hang and leaves the
    /// ledger 5 s to record. With 3 s per request the ledger had its reserve alone (0.75 s), which a
    /// fresh server's first purchase outlasted in a full unit run on a loaded machine (500 after the
    /// request's timeout). Apple's patience (15 s per attempt) still outlasts the request, so a call the
    /// budget did not cut still fails the test.
    static func patientAppleRoomyRequest(_ configuration: inout ServerConfiguration) {
        patientApple(&configuration)
        configuration.requestTimeout = .seconds(8)
    }

    // No wall-clock bound: a call to Apple the budget did not cut would outlast the server's own timeout,
    // which answers request_timeout instead of the 200 (or the restore's app_store_unavailable) asserted
    // here. What the client decides in each case is pinned on a test clock in InteractiveCallTests.
    @Test("Apple hangs or asks to wait 20 s: a classic purchase is answered 200 in time on both surfaces, unpriced")
    func slowAppleRecordsUnpriced() async throws {
        let fake = Self.shop()
        try await RestoreAndSyncTests().withShop(fake, configure: Self.patientAppleRoomyRequest) { client, db, api in
            fake.script(.hang(.seconds(120)), .hang(.seconds(120)), .hang(.seconds(120)), .hang(.seconds(120)))
            let hung = try await Self.sesacPurchase(client, product: APITest.product(2))
            // 200, not the request's timeout: Apple's hang (until this test ends) was cut by the budget, and
            // with no time left the call was not tried again.
            #expect(hung.status == .ok, "\(hung.status) \(hung.body)")
            #expect(fake.requests.count <= 1, "\(fake.requests.map(\.path))")
            fake.clearFaults()
            fake.resetRequests()

            fake.script(.hang(.seconds(120)), .hang(.seconds(120)), .hang(.seconds(120)), .hang(.seconds(120)))
            let json = try await client.api(
                .post, "/api/v1/purchases", uid: "alice",
                json: ["receipt": Self.receipt, "productId": APITest.product(4)])
            #expect(json.status == .ok, "\(json.body)")
            #expect((json.json["purchase"] as? [String: Any])?["price"] is NSNull, "\(json.body)")
            #expect(fake.requests.count <= 1, "\(fake.requests.map(\.path))")
            fake.clearFaults()
            fake.resetRequests()

            // A Retry-After past the budget: answered once, not asked again (the wait is not made).
            fake.script(.rateLimited(retryAfterMs: 20_000))
            let limited = try await Self.sesacPurchase(client, product: APITest.product(3))
            #expect(limited.status == .ok, "\(limited.status) \(limited.body)")
            #expect(fake.requests.count == 1, "\(fake.requests.map(\.path))")
            fake.clearFaults()
            #expect(try await Self.unpriced(db) == ["b-1", "b-2", "b-3"])

            // Apple answers again: the sync prices what was recorded unpriced.
            var report = AppStoreSynchronizer.Report()
            let synchronizer = AppStoreSynchronizer(
                api: api, ledger: LedgerStore(client: db.client), logger: APITest.quietLogger)
            try await synchronizer.syncPrices(into: &report)
            #expect(report.pricesLearned == 3, "\(report)")
        }
    }

    @Test("Apple hangs during a restore: 503 app_store_unavailable before the request's timeout")
    func hungRestore() async throws {
        let fake = Self.shop()
        try await RestoreAndSyncTests().withShop(fake, configure: Self.patientApple) { client, _, _ in
            let bought = try await client.api(
                .post, "/api/v1/purchases", uid: "alice", json: ["signedTransaction": fake.signedTransaction("b-1")])
            #expect(bought.status == .ok, "\(bought.body)")
            fake.resetRequests()
            fake.script(.hang(.seconds(120)), .hang(.seconds(120)), .hang(.seconds(120)), .hang(.seconds(120)))
            let restore = try await client.restore(uid: "alice", transactionId: "b-1")
            // Apple's unavailability, not the request's timeout (503 request_timeout): the hang was cut by the
            // budget, and not tried again.
            #expect(
                restore.status == .serviceUnavailable && restore.errorCode == "app_store_unavailable", "\(restore.body)"
            )
            #expect(fake.requests.count <= 1, "\(fake.requests.map(\.path))")
            fake.clearFaults()
        }
    }
}
