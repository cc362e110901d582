import Foundation
import NIOCore
import NIOHTTP1
import Receipts
import TestSupport

/// What every scenario's server trusts, and how its clients prove purchases.
enum FaultFixtures {
    static let stubSecret = "fault-tests-stub-secret-of-32-bytes-at-least"
    static let adminToken = "fault-tests-admin-token-0123456789"
    static let bundleId = "com.memolease.sesac1"
    /// An Apple-shaped test CA; the servers get its root with `--root-cert`.
    static let pki = try! TestPKI()

    /// Every paid item's product id.
    static let products: [String] =
        (1...4).map { "com.memolease.sesac1.sprout\($0)" } + (1...7).map { "com.memolease.sesac1.background\($0)" }

    static func stubReceipt(product: String, transaction: String) -> String {
        StubReceipt(
            bundleId: bundleId, creationDateMs: 1_763_000_500_000,
            inApp: [
                .init(
                    productId: product, transactionId: transaction, purchaseDateMs: 1_763_000_000_000,
                    priceMilli: 2_500_000, currency: "KRW")
            ]
        ).text(signedWith: stubSecret)
    }

    static func signedTransaction(product: String, transaction: String) -> String {
        pki.sign([
            "transactionId": transaction, "originalTransactionId": transaction, "bundleId": bundleId,
            "productId": product,
            "type": "Non-Consumable", "purchaseDate": 1_763_000_000_000 as Int64,
            "originalPurchaseDate": 1_763_000_000_000 as Int64,
            "signedDate": Int64(Date().timeIntervalSince1970 * 1000), "environment": "Production", "price": 2_500_000,
            "currency": "KRW", "storefront": "KOR", "inAppOwnershipType": "PURCHASED",
        ])
    }

    static func stubRefund(transaction: String, product: String, uuid: String) -> String {
        StubNotification(
            bundleId: bundleId, notificationType: .refund, notificationUUID: uuid, signedDateMs: 1_763_100_000_000,
            transaction: .init(transactionId: transaction, productId: product)
        ).text(signedWith: stubSecret)
    }

    static func json(_ object: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object))
    }

    static func form(_ fields: [(String, String)]) -> [UInt8] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return Array(
            fields.map {
                $0.addingPercentEncoding(withAllowedCharacters: allowed)! + "=" + $1.addingPercentEncoding(
                    withAllowedCharacters: allowed)!
            }
            .joined(separator: "&").utf8)
    }
}

/// One purchase as a client sends it, on one of the three ways a purchase arrives.
struct PurchaseRequest: Sendable {
    enum Way: String, Sendable, CaseIterable {
        /// `POST /api/v1/purchases` with a stub receipt.
        case jsonStub = "json+stub"
        /// `POST /api/v1/purchases` with a StoreKit 2 signed transaction from the test CA.
        case jsonSigned = "json+jws"
        /// `POST /v1/user/shop/ios`, the SeSAC form.
        case sesacStub = "sesac+stub"
    }

    let way: Way
    let uid: String
    let transactionId: String
    let product: String
    let path: String
    let headers: [(String, String)]
    let body: [UInt8]

    init(way: Way, uid: String, transactionId: String, product: String) {
        self.way = way
        self.uid = uid
        self.transactionId = transactionId
        self.product = product
        switch way {
        case .jsonStub:
            path = "/api/v1/purchases"
            headers = [("Authorization", "Bearer dev:\(uid)"), ("Content-Type", "application/json")]
            body = FaultFixtures.json([
                "receipt": FaultFixtures.stubReceipt(product: product, transaction: transactionId),
                "productId": product,
            ])
        case .jsonSigned:
            path = "/api/v1/purchases"
            headers = [("Authorization", "Bearer dev:\(uid)"), ("Content-Type", "application/json")]
            body = FaultFixtures.json([
                "signedTransaction": FaultFixtures.signedTransaction(product: product, transaction: transactionId)
            ])
        case .sesacStub:
            path = "/v1/user/shop/ios"
            headers = [("idtoken", "dev:\(uid)"), ("Content-Type", "application/x-www-form-urlencoded")]
            body = FaultFixtures.form([
                ("receipt", FaultFixtures.stubReceipt(product: product, transaction: transactionId)),
                ("product", product),
            ])
        }
    }

    /// What "recorded" looks like on this way: 200 on both surfaces.
    static let acknowledged = 200

    /// The answer a client gets while the database is down: JSON 503 `database_unavailable`, SeSAC 500.
    var unavailableStatus: Int { way == .sesacStub ? 500 : 503 }

    func send(_ http: FaultHTTP, baseURL: String, timeout: TimeAmount = .seconds(30)) async -> FaultHTTP.Outcome {
        await http.outcome(.POST, baseURL + path, headers: headers, body: body, timeout: timeout).0
    }
}
