import Foundation
import GooglePlay
import HTTPTypes
import HummingbirdTesting
import Ledger
import Postgres
import Shop
import ShopServer
import TestSupport
import Testing

/// A purchase whose payment was pending when the app posted it, completed later by the buyer: Google's
/// ONE_TIME_PRODUCT_PURCHASED push (or the sync) records it for the user who posted it, without the app
/// posting again, against the fake Google and a real PostgreSQL.
@Suite("Google Play pending purchases")
struct PlayPendingTests {
    static func purchased(token: String, sku: String = "sprout2") -> [String: Any] {
        [
            "version": "1.0", "packageName": "com.memolease.sesac1", "eventTimeMillis": "1763100000000",
            "oneTimeProductNotification": [
                "version": "1.0", "notificationType": 1, "purchaseToken": token, "sku": sku,
            ] as [String: Any],
        ]
    }

    static func push(
        _ client: any TestClientProtocol, _ fake: FakeGooglePlay, _ notification: [String: Any]
    )
        async throws -> Answer
    {
        let auth = "Bearer " + (try fake.pushToken(audience: pushAudience))
        return try await client.call(
            .post, "/api/v1/notifications/google-play", authorization: auth,
            json: FakeGooglePlay.pushBody(notification))
    }

    @Test("Google's push that a pending payment completed records it for the user who posted it, once")
    func completedByPush() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-p", orderId: "GPA.7", state: 2))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            try await client.register("mallory")
            #expect(try await client.playPurchase("alice", token: "tok-p").status == .accepted)
            // A second user posting the same pending token claims nothing: the first poster's it stays.
            #expect(try await client.playPurchase("mallory", token: "tok-p").status == .accepted)
            #expect(
                try await count(db, "SELECT count(*) FROM google_play_pending_claims WHERE uid = 'alice'") == 1)
            #expect(try await count(db, "SELECT count(*) FROM google_play_pending_claims") == 1)
            // Still pending when Google pushes: nothing recorded.
            let early = try await Self.push(client, fake, Self.purchased(token: "tok-p"))
            #expect(early.status == .ok && early.json["ledger"] as? String == "none", "\(early.body)")
            #expect(try await count(db, "SELECT count(*) FROM purchases") == 0)

            fake.update("tok-p") { $0.state = 0 }
            let answer = try await Self.push(client, fake, Self.purchased(token: "tok-p"))
            #expect(answer.status == .ok, "\(answer.body)")
            #expect(answer.json["notificationType"] as? String == "ONE_TIME_PRODUCT_PURCHASED")
            #expect(answer.json["ledger"] as? String == "recorded")
            #expect(try await client.ownedFaces("alice").contains(2))
            #expect(try await client.ownedFaces("mallory") == [0])
            #expect(fake.purchase("tok-p")?.acknowledged == true)
            #expect(try await count(db, "SELECT count(*) FROM google_play_acknowledgements") == 1)
            // The app posting it again finds it recorded; Google pushing again records nothing more.
            let again = try await client.playPurchase("alice", token: "tok-p")
            #expect(again.status == .ok && again.json["duplicate"] as? Bool == true, "\(again.body)")
            #expect(try await count(db, "SELECT count(*) FROM journal_entries WHERE kind = 'purchase'") == 1)
            let stolen = try await client.playPurchase("mallory", token: "tok-p")
            #expect(stolen.status == .conflict, "\(stolen.body)")
        }
    }

    @Test("a push about a token nobody posted pending records nothing")
    func unclaimedPush() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-x", orderId: "GPA.8"))
        try await withPlayServer(fake) { client, db, _ in
            try await client.register("alice")
            let answer = try await Self.push(client, fake, Self.purchased(token: "tok-x"))
            #expect(answer.status == .ok && answer.json["ledger"] as? String == "none", "\(answer.body)")
            #expect(try await count(db, "SELECT count(*) FROM purchases") == 0)
            #expect(!fake.requests.contains { $0.path.contains("/tokens/tok-x") })
        }
    }

    @Test("a completion whose push was missed is recorded by the sync for the user who posted it")
    func completedBySync() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-p", orderId: "GPA.7", state: 2))
        fake.add(.init(productId: "background1", token: "tok-q", orderId: "GPA.9", state: 2))
        try await withPlayServer(fake) { client, db, settings in
            try await client.register("alice")
            #expect(try await client.playPurchase("alice", token: "tok-p").status == .accepted)
            #expect(
                try await client.playPurchase("alice", token: "tok-q", productId: "background1").status == .accepted)
            fake.update("tok-p") { $0.state = 0 }
            let synchronizer = GooglePlaySynchronizer(
                client: try GooglePlayClient(configuration: settings.api, logger: PlayTest.quietLogger),
                ledger: LedgerStore(client: db.client, logger: PlayTest.quietLogger), logger: PlayTest.quietLogger)
            let report = try await synchronizer.sync(since: Date())
            #expect(report.pendingChecked == 2 && report.pendingRecorded == 1, "\(report)")
            #expect(try await client.ownedFaces("alice").contains(2))
            #expect(fake.purchase("tok-p")?.acknowledged == true)
            // Recorded claims are not asked about again; the one still pending is.
            let next = try await synchronizer.sync(since: Date())
            #expect(next.pendingChecked == 1 && next.pendingRecorded == 0, "\(next)")
        }
    }
}
