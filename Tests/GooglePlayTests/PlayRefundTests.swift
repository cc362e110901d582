import Foundation
import GooglePlay
import HTTPTypes
import Ledger
import Logging
import Postgres
import Receipts
import Shop
import ShopServer
import TestSupport
import Testing

/// Refunds of Play purchases, by Pub/Sub push and by the voided-purchases read, through the same refund
/// path as Apple's notifications (journal, grant, webhooks), against the fake Google and a real PostgreSQL.
@Suite("Google Play refunds")
struct PlayRefundTests {
    static func voided(token: String, orderId: String?, package: String = "com.memolease.sesac1") -> [String: Any] {
        var voided: [String: Any] = ["purchaseToken": token, "productType": 2, "refundType": 1]
        voided["orderId"] = orderId
        return [
            "version": "1.0", "packageName": package, "eventTimeMillis": "1763100000000",
            "voidedPurchaseNotification": voided,
        ]
    }

    @Test("a refund pushed by Pub/Sub reverses the purchase, revokes the grant and emits the webhook event")
    func refundByPush() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.1"))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            #expect(try await client.playPurchase("alice", token: "tok-a").status == .ok)
            let body = FakeGooglePlay.pushBody(Self.voided(token: "tok-a", orderId: "GPA.1"), messageId: "m-1")
            let auth = "Bearer " + (try fake.pushToken(audience: pushAudience))
            let answer = try await client.call(
                .post, "/api/v1/notifications/google-play", authorization: auth, json: body)
            #expect(answer.status == .ok, "\(answer.body)")
            #expect(answer.json["ledger"] as? String == "applied")
            #expect(answer.json["notificationType"] as? String == "VOIDED_PURCHASE")
            #expect(try await client.ownedFaces("alice") == [0])
            #expect(
                try await count(
                    db, "SELECT count(*) FROM journal_entries WHERE store = 'google_play' AND kind = 'refund'")
                    == 1)
            #expect(try await count(db, "SELECT count(*) FROM webhook_outbox WHERE type = 'refund.applied'") == 1)
            // Pub/Sub pushes again (at least once): stored once, refunded once.
            let again = try await client.call(
                .post, "/api/v1/notifications/google-play", authorization: auth, json: body)
            #expect(again.status == .ok)
            #expect(again.json["storage"] as? String == "duplicate")
            #expect(try await count(db, "SELECT count(*) FROM journal_entries WHERE kind = 'refund'") == 1)
        }
    }

    @Test("a refund pushed before the purchase is recorded is kept and applied when it arrives")
    func refundBeforePurchase() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-a", orderId: "GPA.1"))
        try await withPlayServer(fake) { client, _, _ in
            try await client.register("alice")
            let body = FakeGooglePlay.pushBody(Self.voided(token: "tok-a", orderId: "GPA.1"))
            let auth = "Bearer " + (try fake.pushToken(audience: pushAudience))
            let answer = try await client.call(
                .post, "/api/v1/notifications/google-play", authorization: auth, json: body)
            #expect(answer.json["ledger"] as? String == "parked", "\(answer.body)")
            #expect(try await client.playPurchase("alice", token: "tok-a").status == .ok)
            #expect(try await client.ownedFaces("alice") == [0])
        }
    }

    @Test("forged push tokens are refused with nothing stored")
    func forgedTokens() async throws {
        let fake = FakeGooglePlay()
        try await withPlayServer(fake) { client, db, _ in
            let body = FakeGooglePlay.pushBody(Self.voided(token: "tok-a", orderId: "GPA.1"))
            let forgedKey = try TestSigningKey(
                commonName: "forger", notValidBefore: Date() - 86_400, notValidAfter: Date() + 86_400)
            let tokens: [(String, String?)] = [
                ("no token", nil),
                ("another key, same kid", "Bearer " + (try fake.pushToken(audience: pushAudience, signer: forgedKey))),
                ("another audience", "Bearer " + (try fake.pushToken(audience: "https://elsewhere.example.com/push"))),
                (
                    "another service account",
                    "Bearer " + (try fake.pushToken(audience: pushAudience, email: "evil@example.com"))
                ),
                ("email not verified", "Bearer " + (try fake.pushToken(audience: pushAudience, emailVerified: false))),
                (
                    "another issuer",
                    "Bearer " + (try fake.pushToken(audience: pushAudience, issuer: "https://evil.example.com"))
                ),
                ("expired", "Bearer " + (try fake.pushToken(audience: pushAudience, expiresIn: -3600))),
                ("a user's dev token", "Bearer dev:alice"),
            ]
            for (what, authorization) in tokens {
                let answer = try await client.call(
                    .post, "/api/v1/notifications/google-play", authorization: authorization, json: body)
                #expect(answer.status == .unauthorized, "\(what): \(answer.status) \(answer.body)")
            }
            #expect(try await count(db, "SELECT count(*) FROM store_notifications") == 0)
            #expect(try await count(db, "SELECT count(*) FROM refund_events") == 0)
        }
    }

    @Test("a push about another package is refused with nothing stored")
    func foreignPackagePush() async throws {
        let fake = FakeGooglePlay()
        try await withPlayServer(fake) { client, db, _ in
            let body = FakeGooglePlay.pushBody(
                Self.voided(token: "tok-a", orderId: "GPA.1", package: "com.example.other"))
            let auth = "Bearer " + (try fake.pushToken(audience: pushAudience))
            let answer = try await client.call(
                .post, "/api/v1/notifications/google-play", authorization: auth, json: body)
            #expect(answer.status == .badRequest)
            #expect(answer.errorCode == "wrong_package")
            #expect(try await count(db, "SELECT count(*) FROM store_notifications") == 0)
        }
    }

    @Test("a refund Google never pushed is found by the voided-purchases read, once however often it is read")
    func refundByVoidedRead() async throws {
        let fake = FakeGooglePlay.withTwoPurchases()
        try await withPlayServer(fake) { client, db, settings in
            try await client.buyTwo("alice")
            fake.void("tok-a", reason: 1)
            let ledger = LedgerStore(client: db.client, logger: PlayTest.quietLogger)
            let api = try GooglePlayClient(configuration: settings.api, logger: PlayTest.quietLogger)
            let synchronizer = GooglePlaySynchronizer(client: api, ledger: ledger, logger: PlayTest.quietLogger)
            let report = try await synchronizer.sync(since: Date().addingTimeInterval(-86_400))
            #expect(report.voidsRead == 1 && report.refundsApplied == 1 && report.voidsComplete, "\(report)")
            #expect(try await client.ownedFaces("alice") == [0])
            #expect(try await count(db, "SELECT count(*) FROM webhook_outbox WHERE type = 'refund.applied'") == 1)
            let second = try await synchronizer.sync(since: Date().addingTimeInterval(-86_400))
            #expect(second.refundsKnown == 1 && second.refundsApplied == 0)
            #expect(try await count(db, "SELECT count(*) FROM journal_entries WHERE kind = 'refund'") == 1)
        }
    }

    @Test("an acknowledgement Google did not take is retried by the sync")
    func acknowledgementRetried() async throws {
        let fake = FakeGooglePlay()
        // Bought an hour ago: Google's three days to acknowledge have not run out.
        fake.add(
            .init(
                productId: "sprout2", token: "tok-a", orderId: "GPA.1",
                purchaseTimeMillis: Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000))
        try await withPlayServer(fake) { client, db, settings in
            try await client.register("alice")
            fake.failAcknowledgements(true)
            let purchase = try await client.playPurchase("alice", token: "tok-a")
            #expect(purchase.status == .ok, "\(purchase.body)")
            #expect(try await client.ownedFaces("alice").contains(2))
            #expect(fake.purchase("tok-a")?.acknowledged == false)
            #expect(try await count(db, "SELECT count(*) FROM google_play_acknowledgements") == 0)

            fake.failAcknowledgements(false)
            let ledger = LedgerStore(client: db.client, logger: PlayTest.quietLogger)
            let api = try GooglePlayClient(configuration: settings.api, logger: PlayTest.quietLogger)
            let report = try await GooglePlaySynchronizer(client: api, ledger: ledger, logger: PlayTest.quietLogger)
                .sync(since: Date().addingTimeInterval(-3600))
            #expect(report.acknowledged == 1 && report.acknowledgementsOwed == 0, "\(report)")
            #expect(fake.purchase("tok-a")?.acknowledged == true)
            #expect(try await count(db, "SELECT count(*) FROM google_play_acknowledgements") == 1)
        }
    }
}

@Suite("Google Play acknowledgement deadline")
struct PlayAcknowledgementDeadlineTests {
    @Test("a purchase past Google's three days is no longer owed an acknowledgement")
    func pastDeadline() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-old", orderId: "GPA.9"))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            fake.failAcknowledgements(true)
            #expect(try await client.playPurchase("alice", token: "tok-old").status == .ok)
            let ledger = LedgerStore(client: db.client, logger: PlayTest.quietLogger)
            // Bought in November 2025: long past.
            #expect(try await ledger.googlePlayAcknowledgementsOwed().isEmpty)
            #expect(
                try await ledger.googlePlayAcknowledgementsOwed(now: Date(timeIntervalSince1970: 1_763_000_100)).count
                    == 1)
        }
    }
}
