import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Logging
import NIOCore
import Postgres
import Receipts
import Reports
import Shop
import ShopServer
import TestSupport
import Testing

/// Settings every server test shares.
enum ServerTest {
    static let adminToken = "admin-token-for-tests-0123456789"
    static let stubSecret = "server-test-stub-secret-of-32-bytes-at-least"
    static let bundleId = "com.memolease.sesac1"

    /// One test CA, shaped like Apple's, whose root the test servers trust besides Apple's.
    static let pki = try! TestPKI()

    /// Development tokens, stub receipts (signed with `stubSecret`), the admin token, and App Store data
    /// signed by `pki` or Apple; classic receipts signed by `TestReceiptPKI.shared` or Apple.
    /// No refused-proof limit: the fuzzers post hundreds of refused proofs as one user (UserLimitTests
    /// set the limits they test).
    static func configuration() -> ServerConfiguration {
        ServerConfiguration(
            auth: AuthConfiguration(acceptsDevelopmentTokens: true, adminToken: adminToken),
            receipts: VerifierConfiguration(
                bundleId: bundleId, rootCertificates: [.appleRootCAG3, pki.rootCertificate],
                receiptRootCertificates: [.appleIncRoot, TestReceiptPKI.shared.rootCertificate],
                acceptsStubReceipts: true,
                stubSecret: stubSecret),
            refusedProofLimit: .off, refusedNotificationLimit: .off)
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "shopledger.server.tests")
        logger.logLevel = .critical
        return logger
    }

    /// A stub receipt for `product` (signed), with a fresh transaction id unless one is given.
    static func stubReceipt(
        _ product: String, transaction: String = "stub-\(UUID().uuidString.lowercased())", price: Int64 = 2_500_000
    ) -> String {
        StubReceipt(
            bundleId: bundleId, creationDateMs: 1_763_000_500_000,
            inApp: [
                .init(
                    productId: product, transactionId: transaction, purchaseDateMs: 1_763_000_000_000,
                    priceMilli: price, currency: "KRW")
            ]
        ).text(signedWith: stubSecret)
    }

    /// A classic app receipt (base64) signed by `TestReceiptPKI.shared`, one entry per (product, transaction).
    static func classicReceipt(
        _ entries: [(product: String, transaction: String)], cancelled: Set<String> = [], type: String = "Production"
    ) -> String {
        TestReceiptPKI.shared.receipt(
            TestReceipt(
                receiptType: type, bundleId: bundleId,
                purchases: entries.map { entry in
                    TestReceipt.Purchase(
                        productId: entry.product, transactionId: entry.transaction,
                        cancellationDate: cancelled.contains(entry.transaction) ? "2026-11-02T10:00:00Z" : "")
                }))
    }

    /// A signed stub notification about a stub purchase.
    static func stubNotification(
        _ type: VerifiedNotification.NotificationType, transaction: String, product: String,
        uuid: String = UUID().uuidString.lowercased(), signedDateMs: Int64 = 1_763_100_000_000
    ) -> String {
        StubNotification(
            bundleId: bundleId, notificationType: type, notificationUUID: uuid, signedDateMs: signedDateMs,
            transaction: .init(transactionId: transaction, productId: product)
        ).text(signedWith: stubSecret)
    }

    /// A StoreKit 2 signed transaction from `pki`, Production, for `product`.
    static func signedTransaction(
        _ product: String, transaction: String = String(UInt64.random(in: 1_000_000...UInt64(1) << 50)),
        environment: String = "Production", price: Int = 2_500_000, purchaseDateMs: Int64 = 1_763_000_000_000,
        signedDate: Date = Date()
    ) -> String {
        let now = Int64(signedDate.timeIntervalSince1970 * 1000)
        return pki.sign([
            "transactionId": transaction, "originalTransactionId": transaction, "bundleId": bundleId,
            "productId": product, "type": "Non-Consumable", "purchaseDate": purchaseDateMs,
            "originalPurchaseDate": purchaseDateMs,
            "signedDate": now, "environment": environment, "price": price, "currency": "KRW", "storefront": "KOR",
            "inAppOwnershipType": "PURCHASED",
        ])
    }

    /// An App Store Server Notification V2 from `pki` about a signed transaction.
    static func signedNotification(
        _ type: String, signedTransaction: String, uuid: String = UUID().uuidString, signedDate: Date = Date()
    ) -> String {
        pki.sign([
            "notificationType": type, "notificationUUID": uuid, "version": "2.0",
            "signedDate": Int64(signedDate.timeIntervalSince1970 * 1000),
            "data": [
                "environment": "Production", "appAppleId": 41_234, "bundleId": bundleId, "bundleVersion": "1.0",
                "signedTransactionInfo": signedTransaction,
            ] as [String: Any],
        ])
    }
}

extension ServerHooks {
    /// What `shopledger serve` passes (ServeCommand): the reports' checks and day cache.
    static let asServe = ServerHooks(
        reconciliationChecks: ReconciliationChecks.all, firstPurchaseInvalidation: .reportDays)
}

/// Runs `body` against the application on a database of its own (`.router`: no socket).
func withShopServer(
    _ label: String = #function,
    configure: (inout ServerConfiguration) -> Void = { _ in },
    prover: (any PurchaseProver)? = nil,
    hooks: ServerHooks = .asServe,
    _ body: @escaping @Sendable (any TestClientProtocol, TestDatabase) async throws -> Void
) async throws {
    var configuration = ServerTest.configuration()
    configure(&configuration)
    try await withTestDatabase(label) { db in
        let app = try buildApplication(
            configuration: configuration, client: db.client, logger: ServerTest.quietLogger, prover: prover,
            hooks: hooks)
        try await app.test(.router) { client in try await body(client, db) }
    }
}

/// The answer of one request: status, headers and the body as text.
struct Answer: Sendable {
    let status: HTTPResponse.Status
    let headers: HTTPFields
    let body: String

    /// The JSON surface's error code, if the body is `{"error": {"code": ...}}`.
    var errorCode: String? {
        let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? String
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(body.utf8))
    }

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:]
    }
}

extension TestClientProtocol {
    func send(
        _ method: HTTPRequest.Method, _ uri: String, headers: HTTPFields = [:], body: [UInt8]? = nil
    ) async throws -> Answer {
        try await execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) }) {
            response in
            Answer(status: response.status, headers: response.headers, body: String(buffer: response.body))
        }
    }

    /// A SeSAC-surface request: `idtoken: dev:<uid>` (unless `token` is given) and a form body.
    func sesac(
        _ method: HTTPRequest.Method, _ uri: String, uid: String? = nil, token: String? = nil,
        form: [(String, String)]? = nil, contentType: String = "application/x-www-form-urlencoded"
    ) async throws -> Answer {
        var headers: HTTPFields = [:]
        if let token = token ?? uid.map({ "dev:\($0)" }) { headers[HTTPField.Name("idtoken")!] = token }
        var body: [UInt8]?
        if let form {
            headers[.contentType] = contentType
            body = Array(formEncode(form).utf8)
        }
        return try await send(method, uri, headers: headers, body: body)
    }

    /// A JSON-surface request: `Authorization: Bearer dev:<uid>` (unless `token` is given) and a JSON body.
    func api(
        _ method: HTTPRequest.Method, _ uri: String, uid: String? = nil, token: String? = nil, json: Any? = nil
    ) async throws -> Answer {
        var headers: HTTPFields = [:]
        if let token = token ?? uid.map({ "dev:\($0)" }) { headers[.authorization] = "Bearer \(token)" }
        var body: [UInt8]?
        if let json {
            headers[.contentType] = "application/json"
            body = Array(try JSONSerialization.data(withJSONObject: json, options: [.fragmentsAllowed]))
        }
        return try await send(method, uri, headers: headers, body: body)
    }

    /// Signs `uid` up through the SeSAC surface; expects 200.
    func signUp(_ uid: String, nick: String = "새싹") async throws {
        let answer = try await sesac(.post, "/v1/user", uid: uid, form: signUpForm(nick: nick))
        #expect(answer.status == .ok, "sign-up of \(uid): \(answer.status) \(answer.body)")
    }
}

func signUpForm(nick: String = "새싹", dropping: String? = nil, replacing: [String: String] = [:]) -> [(String, String)] {
    var fields = [
        ("phoneNumber", "+821012345678"), ("FCMtoken", "fcm-token-1"), ("nick", nick),
        ("birth", "1994-11-05T08:15:30.000Z"), ("email", "sprout@example.com"), ("gender", "1"),
    ]
    fields = fields.filter { $0.0 != dropping }.map { ($0.0, replacing[$0.0] ?? $0.1) }
    return fields
}

/// `application/x-www-form-urlencoded`, as URLComponents-based clients send it.
func formEncode(_ fields: [(String, String)]) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return fields.map { name, value in
        name.addingPercentEncoding(withAllowedCharacters: allowed)! + "="
            + value.addingPercentEncoding(withAllowedCharacters: allowed)!
    }.joined(separator: "&")
}

func product(_ item: ItemID) -> String {
    switch item.kind {
    case .face: "com.memolease.sesac1.sprout\(item.index)"
    case .background: "com.memolease.sesac1.background\(item.index)"
    }
}

/// A test prover that answers a signed transaction as it answers `prove`, and refuses every
/// notification after asking `prove` (the tests' provers stand in for purchases).
protocol PurchaseOnlyProver: PurchaseProver {}

extension PurchaseOnlyProver {
    func verifyTransaction(_ jws: String) async throws(ReceiptRefusal) -> VerifiedTransaction {
        try await prove(receipt: jws, productId: nil)
    }

    func verifyNotification(_ signedPayload: String) async throws(ReceiptRefusal) -> VerifiedNotification {
        _ = try await prove(receipt: signedPayload, productId: nil)
        throw ReceiptRefusal(.malformed, "a purchase-only test prover")
    }
}
