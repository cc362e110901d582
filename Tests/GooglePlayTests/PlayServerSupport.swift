import Foundation
import GooglePlay
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Logging
import NIOCore
import Postgres
import Receipts
import Shop
import ShopServer
import TestSupport
import Testing

/// The push endpoint's audience the tests' server is configured with.
let pushAudience = "https://shop.example.com/api/v1/notifications/google-play"

/// Google Play's settings against `fake` at `base`, pushes trusted from the fake's key.
func playSettings(_ fake: FakeGooglePlay, base: String) throws -> GooglePlaySettings {
    GooglePlaySettings(
        api: try PlayTest.configuration(fake, baseURL: base), verificationBudget: .seconds(2),
        push: .init(
            audience: pushAudience, serviceAccountEmail: fake.pushServiceAccount,
            certificates: GoogleCertificateStore(try GoogleCertificates(parsingJSON: fake.certificatesJSON))))
}

/// Runs `body` against a server with Google Play configured against a running fake Google, on a database
/// of its own whose catalog sells face 2 on Google Play as `sprout2` and background 1 as `background1`.
func withPlayServer(
    _ fake: FakeGooglePlay, label: String = #function,
    configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (any TestClientProtocol, TestDatabase, GooglePlaySettings) async throws -> Void
) async throws {
    try await fake.run { base in
        try await withTestDatabase(label) { db in
            let catalog = CatalogStore(client: db.client)
            let ops = SupportRequest(actor: "ops", reason: "sold on Google Play")
            _ = try await catalog.setGoogleProductId(ItemID(kind: .face, index: 2), "sprout2", ops)
            _ = try await catalog.setGoogleProductId(ItemID(kind: .background, index: 1), "background1", ops)
            // Webhook events are written while an endpoint listens (0018).
            try await addListeningEndpoint(db.client)
            var configuration = ServerConfiguration(
                auth: AuthConfiguration(acceptsDevelopmentTokens: true, adminToken: "admin-token-for-tests-0123456789"),
                receipts: VerifierConfiguration(bundleId: "com.memolease.sesac1", rootCertificates: [.appleRootCAG3]),
                refusedProofLimit: .off, refusedNotificationLimit: .off)
            let settings = try playSettings(fake, base: base)
            configuration.googlePlay = settings
            configure(&configuration)
            let app = try buildApplication(
                configuration: configuration, client: db.client, logger: PlayTest.quietLogger)
            try await app.test(.router) { client in try await body(client, db, settings) }
        }
    }
}

struct Answer: Sendable {
    let status: HTTPResponse.Status
    let body: String

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:]
    }
    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
    var purchase: [String: Any] { json["purchase"] as? [String: Any] ?? [:] }
}

extension TestClientProtocol {
    func call(
        _ method: HTTPRequest.Method, _ uri: String, uid: String? = nil, authorization: String? = nil, json: Any? = nil
    ) async throws -> Answer {
        var headers: HTTPFields = [:]
        if let authorization = authorization ?? uid.map({ "Bearer dev:\($0)" }) {
            headers[.authorization] = authorization
        }
        var body: ByteBuffer?
        if let json {
            headers[.contentType] = "application/json"
            body = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json))
        }
        return try await execute(uri: uri, method: method, headers: headers, body: body) { response in
            Answer(status: response.status, body: String(buffer: response.body))
        }
    }

    func register(_ uid: String) async throws {
        let answer = try await call(.post, "/api/v1/me", uid: uid)
        #expect(answer.status == .ok || answer.status == .created, "sign-up of \(uid): \(answer.body)")
    }

    func playPurchase(
        _ uid: String, token: String, productId: String = "sprout2", packageName: String = "com.memolease.sesac1"
    ) async throws -> Answer {
        try await call(
            .post, "/api/v1/purchases", uid: uid,
            json: ["store": "google_play", "packageName": packageName, "productId": productId, "purchaseToken": token])
    }

    /// Signs `uid` up and posts the two purchases ``FakeGooglePlay/withTwoPurchases()`` holds, both recorded.
    func buyTwo(_ uid: String) async throws {
        try await register(uid)
        #expect(try await playPurchase(uid, token: "tok-a").status == .ok)
        #expect(try await playPurchase(uid, token: "tok-b", productId: "background1").status == .ok)
    }

    /// The faces `uid` owns.
    func ownedFaces(_ uid: String) async throws -> [Int] {
        let answer = try await call(.get, "/api/v1/me", uid: uid)
        return ((answer.json["owned"] as? [String: Any])?["faces"] as? [Int]) ?? []
    }
}

/// Counts rows of the ledger's tables.
func count(_ db: TestDatabase, _ sql: String) async throws -> Int {
    try await db.client.query(PostgresQuery(unsafeSQL: sql)).single().decode(Int.self, at: 0)
}

extension FakeGooglePlay {
    /// A fake Google with two purchases: `tok-a` of face 2 (`sprout2`, order GPA.1) and `tok-b` of
    /// background 1 (`background1`, order GPA.2), both unpriced (no order answered).
    static func withTwoPurchases() -> FakeGooglePlay {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.1"))
        fake.add(.init(productId: "background1", token: "tok-b", orderId: "GPA.2"))
        return fake
    }
}
