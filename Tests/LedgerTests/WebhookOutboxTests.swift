import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

/// Migration 0016: every ledger event writes its webhook outbox row in the event's own transaction,
/// by trigger, whichever code path wrote it; nothing that did not commit has one. The events are
/// written while an endpoint is enabled (0018), so each test adds one first.
@Suite("Webhook outbox: one row per ledger event, in the event's transaction")
struct WebhookOutboxTests {
    struct Row: Equatable, CustomStringConvertible {
        let type: String
        let uid: String
        let transactionId: String?
        var description: String { "\(type) \(uid) \(transactionId ?? "-")" }
    }

    static func outbox(_ client: PostgresClient) async throws -> [Row] {
        try await client.query(
            "SELECT type, uid, transaction_id FROM webhook_outbox ORDER BY event_id"
        ).map { row in
            let (type, uid, transactionId) = try row.decode((String, String, String?).self)
            return Row(type: type, uid: uid, transactionId: transactionId)
        }
    }

    static func data(_ client: PostgresClient, _ type: String, _ transactionId: String) async throws -> [String: Any] {
        let text = try await client.query(
            """
            SELECT webhook_event_data(o)::text FROM webhook_outbox o
            WHERE o.type = \(type)::text AND o.transaction_id = \(transactionId)::text
            """
        ).single().decode(String.self, at: 0)
        return try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
    }

    @Test("purchases, learned prices, refunds, reversals, family revokes and support actions each write one event")
    func everyEventType() async throws {
        try await withLedger { db, ledger in
            try await addListeningEndpoint(db.client)
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("p1", item: .face(1)), for: "alice")
            _ = try await ledger.recordPurchase(makeTransaction("u1", item: .face(3), unpriced: true), for: "alice")
            _ = try await ledger.recordLearnedPrice(LearnedPriceTests.signed("u1"))
            _ = try await ledger.recordRefundEvent(makeRefundEvent("r1", .refund, for: "p1", second: 100))
            _ = try await ledger.recordRefundEvent(makeRefundEvent("r2", .refundReversal, for: "p1", second: 200))
            _ = try await ledger.recordPurchase(
                makeTransaction("f1", item: .background(2), ownership: .familyShared), for: "alice")
            _ = try await ledger.recordRefundEvent(makeRefundEvent("r3", .familyRevoke, for: "f1", second: 300))
            let grant = try await ledger.grantCompensation(
                .face(4), to: "alice", SupportRequest(actor: "kim", reason: "outage"))
            _ = try await ledger.revokeCompensation(grant.actionId, SupportRequest(actor: "lee", reason: "wrong user"))

            #expect(
                try await Self.outbox(db.client) == [
                    Row(type: "purchase.recorded", uid: "alice", transactionId: "p1"),
                    Row(type: "purchase.recorded", uid: "alice", transactionId: "u1"),
                    Row(type: "price.learned", uid: "alice", transactionId: "u1"),
                    Row(type: "refund.applied", uid: "alice", transactionId: "p1"),
                    Row(type: "refund.reversed", uid: "alice", transactionId: "p1"),
                    Row(type: "purchase.recorded", uid: "alice", transactionId: "f1"),
                    Row(type: "purchase.revoked", uid: "alice", transactionId: "f1"),
                    Row(type: "support.granted", uid: "alice", transactionId: nil),
                    Row(type: "support.revoked", uid: "alice", transactionId: nil),
                ])
            let purchase = try await Self.data(db.client, "purchase.recorded", "p1")
            #expect(purchase["productId"] as? String == "com.memolease.sesac1.sprout1")
            #expect((purchase["price"] as? [String: Any])?["amountMilli"] as? Int == 1_200_000)
            #expect((purchase["item"] as? [String: Any])?["index"] as? Int == 1)
            #expect(purchase["purchaseDate"] as? String == "2025-10-09T08:53:20.000Z")
            #expect(try await Self.data(db.client, "purchase.recorded", "u1")["price"] is NSNull)
            let learned = try await Self.data(db.client, "price.learned", "u1")
            #expect((learned["price"] as? [String: Any])?["amountMilli"] as? Int == 2_500_000)
            let refund = try await Self.data(db.client, "refund.applied", "p1")
            #expect(refund["refundEventId"] as? String == "r1")
            #expect((refund["amount"] as? [String: Any])?["currency"] as? String == "KRW")
            let granted = try await db.client.query(
                """
                SELECT webhook_event_data(o)->>'actor', webhook_event_data(o)->>'reason' FROM webhook_outbox o
                WHERE o.type = 'support.granted'
                """
            ).single().decode((String, String).self)
            #expect(granted == ("kim", "outage"))
        }
    }

    @Test("an event's data never changes: a refund of an unpriced purchase keeps no amount after a price is learned")
    func renderedDataIsStable() async throws {
        try await withLedger { db, ledger in
            try await addListeningEndpoint(db.client)
            _ = try await ledger.register(uid: "dana", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("u1", item: .face(3), unpriced: true), for: "dana")
            _ = try await ledger.recordRefundEvent(makeRefundEvent("r1", .refund, for: "u1"))
            let before = try await Self.data(db.client, "refund.applied", "u1")
            #expect(before["amount"] is NSNull)
            _ = try await ledger.recordLearnedPrice(LearnedPriceTests.signed("u1"))
            let after = try await Self.data(db.client, "refund.applied", "u1")
            #expect(after["amount"] is NSNull && after["entryId"] as? Int == before["entryId"] as? Int)
            // A refund after the price was learned carries it.
            _ = try await ledger.recordRefundEvent(makeRefundEvent("r2", .refundReversal, for: "u1", second: 200))
            _ = try await ledger.recordRefundEvent(makeRefundEvent("r3", .refund, for: "u1", second: 300))
            let amounts = try await db.client.query(
                """
                SELECT webhook_event_data(o)->'amount'->>'amountMilli' FROM webhook_outbox o
                WHERE o.type = 'refund.applied' ORDER BY o.event_id
                """
            ).map { try $0.decode(String?.self, at: 0) }
            #expect(amounts == [nil, "2500000"])
        }
    }

    @Test("nothing that did not commit, and nothing twice: duplicates, refusals and rollbacks write no event")
    func onlyWhatCommitted() async throws {
        try await withLedger { db, ledger in
            try await addListeningEndpoint(db.client)
            _ = try await ledger.register(uid: "bob", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("p1"), for: "bob")
            _ = try await ledger.recordPurchase(makeTransaction("p1"), for: "bob")
            _ = try? await ledger.recordPurchase(makeTransaction("p2"), for: "nobody")
            _ = try? await ledger.recordPurchase(makeTransaction("p3", productId: "com.example.unknown"), for: "bob")
            _ = try await ledger.recordRefundEvent(makeRefundEvent("r1", .refund, for: "p1"))
            _ = try await ledger.recordRefundEvent(makeRefundEvent("r1", .refund, for: "p1"))
            // A transaction that writes a support action and then fails leaves no event.
            await #expect(throws: PostgresError.self) {
                try await db.client.withTransaction { connection in
                    try await connection.execute(
                        """
                        INSERT INTO support_actions (kind, uid, item_kind, item_index, actor, reason)
                        VALUES ('grant', 'bob', 'face', 2, 'kim', 'rolled back')
                        """)
                    try await connection.execute("SELECT 1 / 0")
                }
            }
            #expect(
                try await Self.outbox(db.client) == [
                    Row(type: "purchase.recorded", uid: "bob", transactionId: "p1"),
                    Row(type: "refund.applied", uid: "bob", transactionId: "p1"),
                ])
            // A refund that arrives before its purchase is parked: its event comes when it is applied.
            _ = try await ledger.recordRefundEvent(makeRefundEvent("r9", .refund, for: "early"))
            #expect(try await Self.outbox(db.client).count == 2)
            _ = try await ledger.recordPurchase(makeTransaction("early", item: .face(2)), for: "bob")
            #expect(
                Array(try await Self.outbox(db.client).suffix(2)) == [
                    Row(type: "purchase.recorded", uid: "bob", transactionId: "early"),
                    Row(type: "refund.applied", uid: "bob", transactionId: "early"),
                ])
        }
    }

    @Test("a group commit batch writes one event per purchase")
    func groupCommit() async throws {
        try await withLedger(maximumConnections: 16) { db, _ in
            try await addListeningEndpoint(db.client)
            let ledger = LedgerStore(client: db.client, groupCommit: GroupCommit(maxBatch: 32, maxInFlight: 1))
            for user in 0..<5 { _ = try await ledger.register(uid: "u\(user)", profile: testProfile) }
            let items: [ItemID] = [.face(1), .face(2), .background(1), .background(4)]
            await withTaskGroup(of: Void.self) { group in
                for number in 0..<40 {
                    group.addTask {
                        _ = try? await ledger.recordPurchase(
                            makeTransaction("g\(number)", item: items[number % 4]), for: "u\(number % 5)")
                    }
                }
            }
            let rows = try await Self.outbox(db.client)
            #expect(rows.count == 40 && Set(rows.compactMap(\.transactionId)).count == 40)
            #expect(rows.allSatisfy { $0.type == "purchase.recorded" })
            #expect(ledger.batcher.statistics.largestBatch > 1, "the purchases went in batches")
        }
    }

    @Test("a subscribed endpoint gets a queue row per event of its types, in the event's transaction")
    func queuedForSubscribers() async throws {
        try await withLedger { db, ledger in
            try await db.client.execute(
                """
                INSERT INTO webhook_endpoints (url, events, secret, created_by) VALUES
                    ('https://a.example/h', NULL, 'whsec_0123456789abcdef01234567', 't'),
                    ('https://b.example/h', '{refund.applied}', 'whsec_0123456789abcdef01234567', 't')
                """)
            try await db.client.execute(
                """
                INSERT INTO webhook_endpoints (url, secret, created_by, enabled, disabled_at, disabled_by)
                VALUES ('https://c.example/h', 'whsec_0123456789abcdef01234567', 't', false, now(), 't')
                """)
            _ = try await ledger.register(uid: "carol", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("p1"), for: "carol")
            _ = try await ledger.recordRefundEvent(makeRefundEvent("r1", .refund, for: "p1"))
            let queued = try await db.client.query(
                """
                SELECT w.url, o.type FROM webhook_pending p JOIN webhook_endpoints w USING (endpoint_id)
                JOIN webhook_outbox o USING (event_id) ORDER BY w.url, o.event_id
                """
            ).map { try $0.decode((String, String).self) }
            #expect(
                queued.map { "\($0.0) \($0.1)" } == [
                    "https://a.example/h purchase.recorded", "https://a.example/h refund.applied",
                    "https://b.example/h refund.applied",
                ])
        }
    }
}
