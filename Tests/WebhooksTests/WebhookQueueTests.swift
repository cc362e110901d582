import Foundation
import Postgres
import TestSupport
import Testing

@testable import Webhooks

/// Only each (endpoint, user) queue's first event is due; the rest wait at 'infinity' and are promoted
/// one by one, so a backlog costs the claim nothing to skip (migration 0016).
@Suite("Webhooks: queue heads, backlogs and promotions")
struct WebhookQueueTests {
    static func dueCount(_ client: PostgresClient) async throws -> Int {
        try await count(client, "SELECT count(*) FROM webhook_pending WHERE due_at <> 'infinity'")
    }

    static func addEndpoint(_ client: PostgresClient, port: Int = 9) async throws -> WebhookEndpoint {
        try await WebhookStore(client: client).addEndpoint(
            url: try WebhookURL("http://127.0.0.1:\(port)/hooks", destinations: .publicAndLoopback), events: nil,
            secret: testSecret, actor: "test")
    }

    @Test("a backlog of 300 events for 10 users leaves 10 due rows, and a claim takes only heads")
    func backlogHasOnlyHeadsDue() async throws {
        try await withTestDatabase { db in
            _ = try await Self.addEndpoint(db.client)
            try await writeGrantEvents(db.client, users: 10, perUser: 30)
            #expect(try await count(db.client, "SELECT count(*) FROM webhook_pending") == 300)
            #expect(try await Self.dueCount(db.client) == 10)
            let claimed = try await WebhookStore(client: db.client).claim(limit: 100, lease: .seconds(30))
            #expect(claimed.count == 10 && Set(claimed.map(\.event.uid)).count == 10)
            // Each is its user's first event.
            let firsts = try await db.client.query("SELECT min(event_id) FROM webhook_outbox GROUP BY uid").map {
                try $0.decode(Int64.self, at: 0)
            }
            #expect(Set(claimed.map(\.event.eventId)) == Set(firsts))
        }
    }

    @Test("delivering a head while an event for the same user is being queued leaves that event due, not waiting")
    func promotionRace() async throws {
        try await withTestDatabase { db in
            _ = try await Self.addEndpoint(db.client)
            let store = WebhookStore(client: db.client)
            try await writeGrantEvents(db.client, users: 1, perUser: 1)
            let head = try #require(try await store.claim(limit: 1, lease: .seconds(30)).first)
            let delivered = WebhookAttemptResult(
                outcome: .delivered, statusCode: 204, error: nil, startedAt: Date(), duration: .milliseconds(5))
            // A ledger event for the same user, its transaction still open: it queued behind the head and
            // holds the head's KEY SHARE lock.
            let recording = try await db.client.withTransaction { connection in
                try await connection.execute(
                    """
                    INSERT INTO support_actions (kind, uid, item_kind, item_index, actor, reason)
                    VALUES ('grant', 'user0', 'face', 2, 'test', 'racing')
                    """)
                let waiting = try await connection.query(
                    "SELECT count(*) FROM webhook_pending WHERE due_at = 'infinity'"
                ).single().decode(Int.self, at: 0)
                #expect(waiting == 1, "queued behind the head")
                // The worker records the head's delivery now: its DELETE waits for this transaction.
                let task = Task {
                    try await store.record(delivered, of: head, retryAfter: .zero, giveUpAfter: .seconds(60))
                }
                try await eventually("the worker's DELETE waits on this transaction's lock") {
                    try await count(
                        db.client,
                        """
                        SELECT count(*) FROM pg_stat_activity
                        WHERE datname = current_database() AND wait_event_type = 'Lock'
                        """) >= 1
                }
                return task
            }
            #expect(try await recording.value == .delivered)
            #expect(try await count(db.client, "SELECT count(*) FROM webhook_pending") == 1)
            #expect(try await Self.dueCount(db.client) == 1, "the new head is due")
        }
    }

    @Test("a head left waiting (its predecessor deleted by hand) is made due by the worker's check")
    func waitingHeadsPromoted() async throws {
        try await withTestDatabase { db in
            _ = try await Self.addEndpoint(db.client)
            try await writeGrantEvents(db.client, users: 3, perUser: 3)
            try await db.client.execute(
                """
                DELETE FROM webhook_pending WHERE event_id IN (SELECT min(event_id) FROM webhook_pending GROUP BY uid)
                """)
            #expect(try await Self.dueCount(db.client) == 0)
            #expect(try await WebhookStore(client: db.client).promoteWaitingHeads() == 3)
            #expect(try await Self.dueCount(db.client) == 3)
        }
    }

    @Test("a replayed event older than a queue's head goes first; later ones wait behind it")
    func replayJoinsTheQueue() async throws {
        try await withTestDatabase { db in
            let endpoint = try await Self.addEndpoint(db.client)
            let store = WebhookStore(client: db.client)
            try await writeGrantEvents(db.client, users: 1, perUser: 3)
            // Deliver the first event by hand, then replay it: it is older than the queue's head.
            let first = try #require(try await store.claim(limit: 1, lease: .seconds(30)).first)
            _ = try await store.record(
                WebhookAttemptResult(
                    outcome: .delivered, statusCode: 204, error: nil, startedAt: Date(), duration: .milliseconds(1)),
                of: first, retryAfter: .zero, giveUpAfter: .seconds(60))
            #expect(try await store.replay(.event(first.event.eventId), endpointId: endpoint.endpointId) == 1)
            let due = try await db.client.query(
                "SELECT event_id FROM webhook_pending WHERE due_at <> 'infinity' ORDER BY event_id"
            ).map { try $0.decode(Int64.self, at: 0) }
            // The replayed event is due; the old head is due too, and the claim's order check holds it back.
            #expect(due.first == first.event.eventId)
            let next = try await store.claim(limit: 10, lease: .seconds(30))
            #expect(next.map(\.event.eventId) == [first.event.eventId])
        }
    }
}
