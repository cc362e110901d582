import Foundation
import Logging
import Postgres
import TestSupport
import Testing

@testable import Webhooks

/// What the outbox keeps (migration 0018): events only while an endpoint is enabled, and for the
/// retention window.
@Suite("Webhooks: events only while an endpoint listens, kept for the retention window")
struct WebhookRetentionTests {
    /// The four event triggers' states, one letter each (`O` enabled, `D` disabled), sorted.
    static func triggerStates(_ client: PostgresClient) async throws -> [String] {
        try await client.query(
            """
            SELECT tgname || '=' || tgenabled::text FROM pg_trigger
            WHERE tgname IN ('purchases_webhook_events', 'journal_entry_rows_webhook_events',
                             'purchase_prices_webhook_events', 'support_actions_webhook_events')
            ORDER BY tgname
            """
        ).map { try $0.decode(String.self, at: 0) }
    }

    static func states(_ letter: String) -> [String] {
        [
            "journal_entry_rows_webhook_events", "purchase_prices_webhook_events", "purchases_webhook_events",
            "support_actions_webhook_events",
        ].map { "\($0)=\(letter)" }
    }

    /// Counts this database's advisory locks, granted or awaited.
    static func advisoryLocks(granted: Bool) -> PostgresQuery {
        """
        SELECT count(*) FROM pg_locks
        WHERE locktype = 'advisory' AND granted = \(granted)
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        """
    }

    static func url(_ port: Int) throws -> WebhookURL {
        try WebhookURL("http://127.0.0.1:\(port)/hooks", destinations: .publicAndLoopback)
    }

    @Test("no enabled endpoint, no event: the triggers follow the endpoints, both ways")
    func eventsFollowEndpoints() async throws {
        try await withTestDatabase { db in
            let store = WebhookStore(client: db.client)
            #expect(try await Self.triggerStates(db.client) == Self.states("D"))
            try await writeGrantEvents(db.client, users: 2, perUser: 1, prefix: "before")
            #expect(try await count(db.client, "SELECT count(*) FROM webhook_outbox") == 0)

            let first = try await store.addEndpoint(url: try Self.url(9), events: nil, secret: testSecret, actor: "t")
            #expect(try await Self.triggerStates(db.client) == Self.states("O"))
            try await writeGrantEvents(db.client, users: 2, perUser: 1, prefix: "during")
            #expect(try await count(db.client, "SELECT count(*) FROM webhook_outbox") == 2)

            // A second endpoint, then the first disabled: still one enabled, still written.
            let second = try await store.addEndpoint(url: try Self.url(10), events: nil, secret: testSecret, actor: "t")
            _ = try await store.disableEndpoint(first.endpointId, actor: "t")
            #expect(try await Self.triggerStates(db.client) == Self.states("O"))
            try await writeGrantEvents(db.client, users: 1, perUser: 1, prefix: "one-left")
            #expect(try await count(db.client, "SELECT count(*) FROM webhook_outbox") == 3)

            // The last one disabled: nothing written; the ledger's own rows are.
            _ = try await store.disableEndpoint(second.endpointId, actor: "t")
            #expect(try await Self.triggerStates(db.client) == Self.states("D"))
            try await writeGrantEvents(db.client, users: 2, perUser: 1, prefix: "after")
            #expect(try await count(db.client, "SELECT count(*) FROM webhook_outbox") == 3)
            #expect(try await count(db.client, "SELECT count(*) FROM support_actions") == 7)
        }
    }

    @Test("an endpoint added while the last one is being disabled leaves the events on")
    func concurrentChangesSerialize() async throws {
        try await withTestDatabase { db in
            let store = WebhookStore(client: db.client)
            let only = try await store.addEndpoint(url: try Self.url(9), events: nil, secret: testSecret, actor: "t")
            // Another database of the cluster holds the same advisory lock meanwhile, as another test's
            // endpoint change does: pg_locks lists it too.
            let (elsewhereGate, elsewhereOpener) = AsyncStream<Void>.makeStream()
            let (elsewhereHeld, elsewhereHolds) = AsyncStream<Void>.makeStream()
            let elsewhere = Task {
                try await withClient(url: TestCluster.replaceDatabase(in: db.url, with: "postgres")) { other in
                    try await other.withTransaction { connection in
                        try await connection.execute(
                            "SELECT pg_advisory_xact_lock(hashtext('shopledger.webhook_events'))")
                        elsewhereHolds.yield()
                        for await _ in elsewhereGate { break }
                    }
                }
            }
            defer { elsewhereOpener.finish() }
            for await _ in elsewhereHeld { break }
            let (gate, opener) = AsyncStream<Void>.makeStream()
            // The disable commits only once the add is seen waiting for it (the advisory lock).
            let disabling = Task {
                try await db.client.withTransaction { connection in
                    try await connection.execute(
                        """
                        UPDATE webhook_endpoints SET enabled = false, disabled_at = now(), disabled_by = 't'
                        WHERE endpoint_id = \(only.endpointId)
                        """)
                    for await _ in gate { break }
                }
            }
            // Once the disable holds the lock (the triggers are disabled inside its transaction). pg_locks
            // is the whole cluster's, and other tests change endpoints in their own databases at the same
            // time: only this database's locks count.
            try await eventually("the disable holds the lock") {
                try await count(db.client, Self.advisoryLocks(granted: true)) == 1
            }
            let adding = Task {
                try await store.addEndpoint(url: try Self.url(10), events: nil, secret: testSecret, actor: "t")
            }
            try await eventually("the add waits for the disable") {
                try await count(db.client, Self.advisoryLocks(granted: false)) == 1
            }
            opener.finish()
            try await disabling.value
            _ = try await adding.value
            elsewhereOpener.finish()
            try await elsewhere.value
            #expect(try await Self.triggerStates(db.client) == Self.states("O"))
            try await writeGrantEvents(db.client, users: 1, perUser: 1)
            #expect(try await count(db.client, "SELECT count(*) FROM webhook_outbox") == 1)
        }
    }

    /// Events and attempts `days` old, as if recorded then (created_at is written explicitly).
    static func writeOld(_ client: PostgresClient, events: Int, days: Int) async throws -> [Int64] {
        try await client.query(
            """
            INSERT INTO webhook_outbox (type, uid, action_id, created_at)
            SELECT 'support.granted', 'old' || g, g, now() - \(days) * interval '1 day'
            FROM generate_series(1, \(events)) g
            RETURNING event_id
            """
        ).map { try $0.decode(Int64.self, at: 0) }
    }

    @Test("prune deletes events and attempts past the window, keeps queued and recent ones, and nothing else can")
    func pruneKeepsWhatIsNeeded() async throws {
        try await withTestDatabase { db in
            let store = WebhookStore(client: db.client)
            // Written before the endpoint exists, so none is queued (the outbox's fan-out queues for it).
            let old = try await Self.writeOld(db.client, events: 25, days: 40)
            let recent = try await Self.writeOld(db.client, events: 5, days: 0)
            let endpoint = try await store.addEndpoint(
                url: try Self.url(9), events: nil, secret: testSecret, actor: "t")
            // Three old events still queued for the endpoint (a replay, say), and an old and a new attempt.
            try await db.client.execute(
                """
                INSERT INTO webhook_pending (endpoint_id, event_id, uid)
                SELECT \(endpoint.endpointId), event_id, uid FROM webhook_outbox WHERE event_id = ANY(\(Array(old.prefix(3))))
                """)
            try await db.client.execute(
                """
                INSERT INTO webhook_attempts (endpoint_id, event_id, attempt, started_at, duration_ms, status_code,
                    outcome, recorded_at)
                VALUES (\(endpoint.endpointId), \(old[5]), 1, now() - interval '40 days', 5, 204, 'delivered',
                        now() - interval '40 days'),
                       (\(endpoint.endpointId), \(recent[0]), 1, now(), 5, 204, 'delivered', now())
                """)

            // Refused: deleting by hand, deleting a recent row with the flag set, a window under a day.
            await #expect(throws: PostgresError.self) { try await db.client.execute("DELETE FROM webhook_outbox") }
            await #expect(throws: PostgresError.self) {
                try await db.client.withTransaction { connection in
                    try await connection.execute("SELECT set_config('shopledger.webhook_prune', 'on', true)")
                    try await connection.execute(
                        "DELETE FROM webhook_outbox WHERE event_id = \(recent[0])")
                }
            }
            await #expect(throws: PostgresError.self) { try await store.prune(keep: .seconds(3600)) }
            #expect(try await count(db.client, "SELECT count(*) FROM webhook_outbox") == 30)

            // In batches of 10: 22 old, unqueued events go; the queued three and the recent five stay.
            #expect(try await store.pruneAll(keep: .seconds(30 * 86_400), batch: 10) == 22)
            let left = try await db.client.query("SELECT event_id FROM webhook_outbox ORDER BY event_id").map {
                try $0.decode(Int64.self, at: 0)
            }
            #expect(left == Array(old.prefix(3)) + recent)
            #expect(
                try await db.client.query("SELECT event_id FROM webhook_attempts").map {
                    try $0.decode(Int64.self, at: 0)
                } == [recent[0]])
            // The flag was the prune's own: this session deletes nothing by hand afterwards.
            await #expect(throws: PostgresError.self) {
                try await db.client.execute("DELETE FROM webhook_outbox WHERE event_id = \(old[0])")
            }
        }
    }

    @Test("the retention service prunes when it starts")
    func servicePrunesAtStart() async throws {
        try await withTestDatabase { db in
            _ = try await Self.writeOld(db.client, events: 12, days: 40)
            var logger = Logger(label: "retention-test")
            logger.logLevel = .critical
            let service = WebhookRetentionService(
                store: WebhookStore(client: db.client), keep: .seconds(30 * 86_400), logger: logger)
            let running = Task { try await service.run() }
            try await eventually("the old events pruned") {
                try await count(db.client, "SELECT count(*) FROM webhook_outbox") == 0
            }
            running.cancel()
            try await running.value
        }
    }
}
