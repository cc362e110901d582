import AppStoreServerAPI
import Foundation
import HTTPTypes
import HummingbirdTesting
import Ledger
import Receipts
import ShopServer
import TestSupport
import Testing

/// A classic app receipt carries no price: when the App Store Server API answers, the purchase is
/// recorded with Apple's signed price, currency and storefront; when it does not, unpriced.
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

    func withShop(
        _ fake: FakeAppStore, _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        try await fake.run { production, sandbox in
            let configuration = ServerConfiguration(
                auth: AuthConfiguration(acceptsDevelopmentTokens: true),
                receipts: VerifierConfiguration(
                    bundleId: APITest.bundleId, rootCertificates: [APITest.pki.rootCertificate],
                    receiptRootCertificates: [TestReceiptPKI.shared.rootCertificate]),
                appStoreAPI: APITest.configuration(fake, production: production, sandbox: sandbox))
            try await withTestDatabase { db in
                _ = try await LedgerStore(client: db.client).register(
                    uid: "alice", profile: try UserProfile(json: #"{"nick":"새싹"}"#))
                let app = try buildApplication(
                    configuration: configuration, client: db.client, logger: APITest.quietLogger)
                try await app.test(.router) { client in try await body(client) }
            }
        }
    }

    static func post(_ client: any TestClientProtocol, receipt: String, product: String) async throws -> ShopAnswer {
        try await client.api(
            .post, "/api/v1/purchases", uid: "alice", json: ["receipt": receipt, "productId": product])
    }

    @Test(
        "Priced with Apple's signed price; again a duplicate, also while Apple fails; unpriced when Apple fails first")
    func classicReceiptGetsItsPrice() async throws {
        let fake = APITest.fake()
        let face3 = APITest.product(3)
        let face4 = APITest.product(4)
        fake.add(
            FakeAppStore.Transaction(
                id: "c-200", productId: face3, customer: "x", purchaseMs: Self.purchaseMs, price: 3_300_000))
        fake.add(
            FakeAppStore.Transaction(
                id: "c-201", productId: face4, customer: "x", purchaseMs: Self.purchaseMs, price: 2_500_000))
        let receipt = Self.receipt([(face3, "c-200"), (face4, "c-201")])
        try await withShop(fake) { client in
            let first = try await Self.post(client, receipt: receipt, product: face3)
            #expect(first.status == .ok, "\(first.body)")
            let purchase = first.json["purchase"] as? [String: Any]
            let price = purchase?["price"] as? [String: Any]
            #expect(price?["amountMilli"] as? Int == 3_300_000 && price?["currency"] as? String == "KRW")
            #expect(purchase?["storefront"] as? String == "KOR")
            #expect(fake.requests.contains { $0.path == "/inApps/v2/history/c-200" })

            let again = try await Self.post(client, receipt: receipt, product: face3)
            #expect(again.status == .ok && again.json["duplicate"] as? Bool == true, "\(again.body)")

            // Apple failing now: the offline, unpriced entry says nothing against the priced record.
            fake.script(.status(500, errorCode: nil), .status(500, errorCode: nil), .status(500, errorCode: nil))
            let offline = try await Self.post(client, receipt: receipt, product: face3)
            #expect(offline.status == .ok && offline.json["duplicate"] as? Bool == true, "\(offline.body)")

            // Apple failing at the first post: recorded unpriced; a later post does not rewrite it.
            fake.script(.status(500, errorCode: nil), .status(500, errorCode: nil), .status(500, errorCode: nil))
            let unpriced = try await Self.post(client, receipt: receipt, product: face4)
            #expect(unpriced.status == .ok, "\(unpriced.body)")
            #expect((unpriced.json["purchase"] as? [String: Any])?["price"] is NSNull)
            let later = try await Self.post(client, receipt: receipt, product: face4)
            #expect(later.json["duplicate"] as? Bool == true)
            #expect((later.json["purchase"] as? [String: Any])?["price"] is NSNull)
        }
    }
}
