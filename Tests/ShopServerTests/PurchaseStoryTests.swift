import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import ShopServer

@Suite("The purchase story, end to end")
struct PurchaseStoryTests {
    @Test(
        "sign up → buy sprout2 with a stub receipt → myinfo lists face 2 → equip it → REFUND → gone, reconcile passes")
    func story() async throws {
        try await withShopServer { client, db in
            try await client.signUp("story")
            let receipt = ServerTest.stubReceipt("com.memolease.sesac1.sprout2", transaction: "stub-story-1")
            let bought = try await client.sesac(
                .post, "/v1/user/shop/ios", uid: "story",
                form: [("receipt", receipt), ("product", "com.memolease.sesac1.sprout2")])
            #expect(bought.status == .ok)

            var info = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "story").decode(
                ClientUserDocument.self)
            #expect(info.sesacCollection == [0, 2])
            #expect(info.transactionId == ["stub-story-1"])

            #expect(
                try await client.sesac(
                    .post, "/v1/user/shop/item", uid: "story", form: [("sesac", "2"), ("background", "0")]
                ).status == .ok)
            info = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "story").decode(ClientUserDocument.self)
            #expect(info.sesac == 2)

            let refund = ServerTest.stubNotification(
                .refund, transaction: "stub-story-1", product: "com.memolease.sesac1.sprout2")
            let answer = try await client.api(.post, "/api/v1/notifications/app-store", json: ["signedPayload": refund])
            #expect(answer.status == .ok && answer.json["ledger"] as? String == "applied", "\(answer.body)")

            info = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "story").decode(ClientUserDocument.self)
            #expect(info.sesacCollection == [0])
            #expect(info.sesac == 0, "a refunded face is no longer shown")
            #expect(info.transactionId == ["stub-story-1"], "the purchase stays in the history")
            // Equipping the refunded face is refused now.
            #expect(
                try await client.sesac(
                    .post, "/v1/user/shop/item", uid: "story", form: [("sesac", "2"), ("background", "0")]
                ).status == .created)

            let report = try await Reconciler(client: db.client).run()
            #expect(report.passed, "\(report.text)")
            let refunds = try await db.client.query(
                "SELECT count(*) FROM journal_entries WHERE kind = 'refund' AND transaction_id = 'stub-story-1'"
            ).single().decode(Int.self, at: 0)
            #expect(refunds == 1)
        }
    }

    @Test("a notification stored while the ledger step failed is applied by the sweeper")
    func sweeperAppliesStoredNotifications() async throws {
        try await withTestDatabase { db in
            let ledger = LedgerStore(client: db.client)
            _ = try await ledger.register(uid: "s1", profile: try UserProfile(json: "{}"))
            let purchase = ServerTest.stubReceipt(product(.face(3)), transaction: "stub-sweep")
            let verifier = try ReceiptVerifier(configuration: ServerTest.configuration().receipts)
            _ = try await ledger.recordPurchase(try await verifier.prove(receipt: purchase, productId: nil), for: "s1")
            // Stored, as the route does first, but the process "died" before applying it.
            let text = ServerTest.stubNotification(.refund, transaction: "stub-sweep", product: product(.face(3)))
            _ = try await ledger.storeNotification(try await verifier.verifyNotification(text), signedPayload: text)
            #expect(try await !Reconciler(client: db.client).run().passed, "notifications_applied notices it")

            // A server starting on this database sweeps at start.
            var configuration = ServerTest.configuration()
            configuration.notificationSweepInterval = .milliseconds(50)
            // The app runs (and at the end shuts down) a pool of its own.
            let appClient = PostgresClient(configuration: .init(connection: .init(url: db.url), minimumConnections: 0))
            let app = try buildApplication(
                configuration: configuration, client: appClient, logger: ServerTest.quietLogger)
            try await app.test(.router) { client in
                // Until the sweep has applied them (a bound for a broken test, not a time it measures).
                let deadline = ContinuousClock.now + .seconds(60)
                while try await !ledger.unappliedNotifications().isEmpty, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                let me = try await client.api(.get, "/api/v1/me", uid: "s1")
                #expect((me.json["owned"] as? [String: [Int]])?["faces"] == [0])
                // /metrics counts the sweeps and what they applied.
                let metrics = try await client.send(.get, "/metrics").body
                #expect(metrics.contains("shop_notification_sweep_applied_total 1\n"), "\(metrics)")
                #expect(metrics.contains("shop_notification_sweep_failures_total 0\n"), "\(metrics)")
                #expect(metrics.contains(#"shop_notification_sweeps_total{result="ok"}"#), "\(metrics)")
            }
            #expect(try await Reconciler(client: db.client).run().passed)
        }
    }
}
