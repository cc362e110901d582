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

/// Play purchases through `POST /api/v1/purchases`, against the fake Google and a real PostgreSQL: each
/// behaves as its App Store twin (PurchaseStoryTests, ShopServerTests).
@Suite("Google Play purchases")
struct PlayPurchaseTests {
    @Test("a purchase is verified with Google, recorded unpriced for the caller, then acknowledged")
    func purchase() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.3300-0000-0000-00001"))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            let answer = try await client.playPurchase("alice", token: "tok-a")
            #expect(answer.status == .ok, "\(answer.body)")
            #expect(answer.json["duplicate"] as? Bool == false)
            #expect(answer.purchase["store"] as? String == "google_play")
            #expect(answer.purchase["environment"] as? String == "Production")
            #expect(answer.purchase["transactionId"] as? String == "GPA.3300-0000-0000-00001")
            #expect(answer.purchase["productId"] as? String == "sprout2")
            #expect(try await client.ownedFaces("alice").contains(2))
            // Unpriced (Google's answer has none), in the production book, never guessed.
            let row = try await db.client.query(
                """
                SELECT price_milli IS NULL, book::text, storefront FROM purchases
                WHERE store = 'google_play' AND transaction_id = 'GPA.3300-0000-0000-00001'
                """
            ).single()
            let (unpriced, book, storefront) = try row.decode((Bool, String, String?).self)
            // Google's alpha-2 region as StoreKit's alpha-3 storefront, so reports add both stores' countries.
            #expect(unpriced && book == "production" && storefront == "KOR")
            #expect(fake.purchase("tok-a")?.acknowledged == true)
            #expect(fake.purchase("tok-a")?.consumed == false)
            #expect(try await count(db, "SELECT count(*) FROM google_play_acknowledgements") == 1)
            #expect(
                try await count(
                    db, "SELECT count(*) FROM webhook_outbox WHERE type = 'purchase.recorded' AND store = 'google_play'"
                )
                    == 1)
        }
    }

    @Test("the same token posted again is a duplicate; Google is asked, nothing is written twice")
    func duplicate() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.1"))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            #expect(try await client.playPurchase("alice", token: "tok-a").status == .ok)
            let again = try await client.playPurchase("alice", token: "tok-a")
            #expect(again.status == .ok, "\(again.body)")
            #expect(again.json["duplicate"] as? Bool == true)
            #expect(try await count(db, "SELECT count(*) FROM purchases WHERE store = 'google_play'") == 1)
            #expect(try await count(db, "SELECT count(*) FROM google_play_purchases") == 1)
            #expect(try await count(db, "SELECT count(*) FROM journal_entries WHERE store = 'google_play'") == 1)
        }
    }

    @Test("another user's token is refused as Apple's are: 409, nothing granted")
    func crossUserReplay() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.1"))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            try await client.register("mallory")
            #expect(try await client.playPurchase("alice", token: "tok-a").status == .ok)
            let replay = try await client.playPurchase("mallory", token: "tok-a")
            #expect(replay.status == .conflict)
            #expect(replay.errorCode == "transaction_owned_by_another_user")
            #expect(try await client.ownedFaces("mallory") == [0])
            #expect(try await count(db, "SELECT count(*) FROM purchases WHERE uid = 'mallory'") == 0)
        }
    }

    @Test("a pending payment grants nothing (202); once Google completes it, it is recorded")
    func pendingThenCompleted() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-p", orderId: "GPA.2", state: 2))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            let pending = try await client.playPurchase("alice", token: "tok-p")
            #expect(pending.status == .accepted, "\(pending.body)")
            #expect(pending.json["pending"] as? Bool == true)
            #expect(try await client.ownedFaces("alice") == [0])
            #expect(try await count(db, "SELECT count(*) FROM purchases") == 0)
            #expect(fake.purchase("tok-p")?.acknowledged == false)

            fake.update("tok-p") { $0.state = 0 }
            let completed = try await client.playPurchase("alice", token: "tok-p")
            #expect(completed.status == .ok, "\(completed.body)")
            #expect(completed.json["duplicate"] as? Bool == false)
            #expect(try await client.ownedFaces("alice").contains(2))
            #expect(fake.purchase("tok-p")?.acknowledged == true)
        }
    }

    @Test("a cancelled purchase, an unknown token and an uncatalogued product are refused with nothing written")
    func refusals() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-c", orderId: "GPA.3", state: 1))
        fake.add(.init(productId: "sprout9", token: "tok-u", orderId: "GPA.4"))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            let cancelled = try await client.playPurchase("alice", token: "tok-c")
            #expect(cancelled.status == .unprocessableContent && cancelled.errorCode == "purchase_cancelled")
            let unknown = try await client.playPurchase("alice", token: "no-such-token")
            #expect(unknown.status == .unprocessableContent && unknown.errorCode == "purchase_not_found")
            let uncatalogued = try await client.playPurchase("alice", token: "tok-u", productId: "sprout9")
            #expect(uncatalogued.status == .unprocessableContent && uncatalogued.errorCode == "unknown_product")
            #expect(try await count(db, "SELECT count(*) FROM purchases") == 0)
            #expect(fake.purchase("tok-u")?.acknowledged == false)
        }
    }

    @Test("a purchase for another package is refused before Google is asked")
    func foreignPackage() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.1"))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            let answer = try await client.playPurchase("alice", token: "tok-a", packageName: "com.example.other")
            #expect(answer.status == .unprocessableContent)
            #expect(answer.errorCode == "wrong_package")
            #expect(fake.requests.isEmpty)
            #expect(try await count(db, "SELECT count(*) FROM purchases") == 0)
        }
    }

    @Test("a test purchase is recorded as the sandbox is, never in the production book")
    func testPurchase() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-t", orderId: "GPA.5", purchaseType: 0))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            let answer = try await client.playPurchase("alice", token: "tok-t")
            #expect(answer.status == .ok, "\(answer.body)")
            #expect(answer.purchase["environment"] as? String == "Sandbox")
            #expect(try await count(db, "SELECT count(*) FROM purchases WHERE book = 'sandbox'") == 1)
        }
    }

    @Test("Google unavailable: 503 with Retry-After and nothing recorded; the retry records it")
    func unavailable() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.1"))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            fake.script(.status(503, status: "UNAVAILABLE"), times: 5)
            let answer = try await client.playPurchase("alice", token: "tok-a")
            #expect(answer.status == .serviceUnavailable, "\(answer.body)")
            #expect(answer.errorCode == "google_play_unavailable")
            #expect(try await count(db, "SELECT count(*) FROM purchases") == 0)
            let retry = try await client.playPurchase("alice", token: "tok-a")
            #expect(retry.status == .ok, "\(retry.body)")
            // /metrics counts each attempt, and the call that failed for good.
            let metrics = try await client.call(.get, "/metrics").body.split(separator: "\n")
            func line(_ name: String, _ labels: [String]) -> Bool {
                metrics.contains { row in row.hasPrefix(name + "{") && labels.allSatisfy { row.contains($0) } }
            }
            #expect(line("shop_googleplay_api_requests_total", [#"endpoint="products_get""#, #"status="503""#]))
            #expect(line("shop_googleplay_api_requests_total", [#"endpoint="products_get""#, #"status="200""#]))
            #expect(
                line("shop_googleplay_api_requests_total", [#"endpoint="products_acknowledge""#, #"status="204""#]))
            #expect(line("shop_googleplay_api_errors_total", [#"endpoint="products_get""#, #"code="api_error""#]))
        }
    }

    @Test("an obfuscated account id must be the caller's appAccountToken")
    func accountId() async throws {
        let fake = FakeGooglePlay()
        let token = UUID()
        fake.add(.init(productId: "sprout2", token: "tok-1", orderId: "GPA.6", accountId: token.uuidString))
        fake.add(.init(productId: "background1", token: "tok-2", orderId: "GPA.7", accountId: UUID().uuidString))
        fake.add(.init(productId: "background1", token: "tok-3", orderId: "GPA.8", accountId: "not-a-uuid"))
        try await withPlayServer(fake) { client, _, _ in
            try await client.register("alice")
            #expect(try await client.playPurchase("alice", token: "tok-1").status == .ok)
            let other = try await client.playPurchase("alice", token: "tok-2", productId: "background1")
            #expect(other.status == .unprocessableContent && other.errorCode == "account_token_mismatch")
            let opaque = try await client.playPurchase("alice", token: "tok-3", productId: "background1")
            #expect(opaque.status == .unprocessableContent && opaque.errorCode == "account_token_mismatch")
        }
    }

    @Test("Apple's body shapes are unchanged; a Play body with Apple's fields is refused")
    func bodyShapes() async throws {
        let fake = FakeGooglePlay()
        try await withPlayServer(fake) { client, _, _ in
            try await client.register("alice")
            let mixed = try await client.call(
                .post, "/api/v1/purchases", uid: "alice",
                json: [
                    "store": "google_play", "signedTransaction": "x", "packageName": "p", "productId": "sprout2",
                    "purchaseToken": "t",
                ])
            #expect(mixed.status == .badRequest)
            let unknownStore = try await client.call(
                .post, "/api/v1/purchases", uid: "alice", json: ["store": "amazon", "receipt": "x"])
            #expect(unknownStore.status == .badRequest)
            let apple = try await client.call(
                .post, "/api/v1/purchases", uid: "alice", json: ["signedTransaction": "x.y.z"])
            #expect(apple.status == .unprocessableContent)
        }
    }
}

@Suite("Google Play product ids by the admin API")
struct PlayCatalogAdminTests {
    @Test("the admin token maps an item to its Play product id once; a user cannot")
    func adminMapsProduct() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout4", token: "tok-4", orderId: "GPA.4"))
        try await withPlayServer(fake) { client, _, _ in
            try await client.register("alice")
            #expect(
                try await client.playPurchase("alice", token: "tok-4", productId: "sprout4").errorCode
                    == "unknown_product")
            let admin = "Bearer admin-token-for-tests-0123456789"
            let uri = "/api/v1/admin/catalog/face/4/google-product"
            let byUser = try await client.call(.post, uri, uid: "alice", json: ["googleProductId": "sprout4"])
            #expect(byUser.status == .unauthorized || byUser.status == .forbidden)
            let set = try await client.call(.post, uri, authorization: admin, json: ["googleProductId": "sprout4"])
            #expect(set.status == .ok, "\(set.body)")
            #expect(set.json["googleProductId"] as? String == "sprout4")
            let changed = try await client.call(.post, uri, authorization: admin, json: ["googleProductId": "other4"])
            #expect(changed.status == .unprocessableContent && changed.errorCode == "invalid_input")
            let taken = try await client.call(
                .post, "/api/v1/admin/catalog/face/3/google-product", authorization: admin,
                json: ["googleProductId": "sprout4"])
            #expect(taken.status == .unprocessableContent)
            let bought = try await client.playPurchase("alice", token: "tok-4", productId: "sprout4")
            #expect(bought.status == .ok, "\(bought.body)")
            #expect(try await client.ownedFaces("alice").contains(4))
            // The catalog shows both stores' ids of the item.
            let items = try await client.call(.get, "/api/v1/catalog", uid: "alice").json["items"] as? [[String: Any]]
            let face4 = try #require(items?.first { $0["kind"] as? String == "face" && $0["index"] as? Int == 4 })
            #expect(face4["googleProductId"] as? String == "sprout4")
            #expect(face4["productId"] as? String == "com.memolease.sesac1.sprout4")
        }
    }
}

@Suite("Google Play and the per-user limits")
struct PlayLimitTests {
    @Test("tokens Google refuses are spent from the refused-proof allowance; past it Google is not asked")
    func refusedTokensLimited() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-good", orderId: "GPA.1"))
        try await withPlayServer(fake, configure: { $0.refusedProofLimit = RateLimit(count: 2, seconds: 3600) }) {
            client, _, _ in
            try await client.register("mallory")
            try await client.register("alice")
            // A good purchase spends nothing.
            #expect(try await client.playPurchase("alice", token: "tok-good").status == .ok)
            for index in 1...2 {
                let refused = try await client.playPurchase("mallory", token: "forged-\(index)")
                #expect(refused.errorCode == "purchase_not_found")
            }
            let asked = fake.requests.count
            let limited = try await client.playPurchase("mallory", token: "forged-3")
            #expect(limited.status == .tooManyRequests && limited.errorCode == "rate_limited", "\(limited.body)")
            #expect(fake.requests.count == asked)
            // Another user is not held back by mallory's refusals.
            fake.add(.init(productId: "background1", token: "tok-b", orderId: "GPA.2"))
            #expect(try await client.playPurchase("alice", token: "tok-b", productId: "background1").status == .ok)
        }
    }
}

@Suite("Google Play's answer as the ledger's transaction")
struct PlayTransactionTests {
    static func answer(_ fields: String) throws -> ProductPurchase {
        try JSONDecoder().decode(
            ProductPurchase.self,
            from: Data(#"{"purchaseTimeMillis": "1763000000000", "purchaseState": 0, \#(fields)}"#.utf8))
    }

    @Test("region as storefront, order id or token hash as transaction id, test purchases in the sandbox")
    func mapping() throws {
        let real = try GooglePlayDesk.transaction(
            try Self.answer(#""orderId": "GPA.1", "regionCode": "US""#), packageName: "com.a.b", productId: "p",
            token: "t")
        #expect(real.store == .googlePlay && real.environment == .production && real.transactionId == "GPA.1")
        #expect(real.storefront == "USA" && real.priceMilli == nil && real.currency == nil)
        let unknownRegion = try GooglePlayDesk.transaction(
            try Self.answer(#""regionCode": "ZZ", "purchaseType": 0"#), packageName: "com.a.b", productId: "p",
            token: "t")
        #expect(unknownRegion.storefront == nil && unknownRegion.environment == .sandbox)
        #expect(unknownRegion.transactionId.hasPrefix("token:") && unknownRegion.transactionId.count == 70)
        // The same purchase read again (now acknowledged) is the same evidence: a duplicate, not a conflict.
        let again = try GooglePlayDesk.transaction(
            try Self.answer(#""orderId": "GPA.1", "regionCode": "US", "acknowledgementState": 1"#),
            packageName: "com.a.b", productId: "p", token: "t")
        #expect(again.evidenceSHA256 == real.evidenceSHA256)
    }
}
