import Foundation
import Postgres

/// The delivery queue (`webhook_pending`, migration 0016): what a worker claims, and what each attempt's
/// outcome does to the queue and the endpoint.
extension WebhookStore {
    /// Claims up to `limit` deliveries that are due, for enabled endpoints, each the oldest queued event
    /// of its user for its endpoint (so one user's events go out in order). Rows another worker holds
    /// are skipped (`SKIP LOCKED`); a claimed row is not due again until `lease` has passed, so a worker
    /// that dies mid-delivery delays its deliveries by the lease, and never loses them. Only queue heads
    /// are due (the events behind one wait at 'infinity', migration 0016), so a backlog costs nothing
    /// to skip; the NOT EXISTS keeps the order when two events of a user were queued at once. The row
    /// lock is NO KEY UPDATE: a purchase queuing behind the head (KEY SHARE) never waits for a claim.
    public func claim(limit: Int, lease: Duration) async throws -> [WebhookDelivery] {
        let claim = UUID()
        let leaseMilliseconds = Int64(lease.seconds * 1000)
        return try await client.query(
            """
            WITH due AS (
                SELECT p.endpoint_id, p.event_id
                FROM webhook_pending p
                JOIN webhook_endpoints w ON w.endpoint_id = p.endpoint_id AND w.enabled
                WHERE p.due_at <= now()
                  AND NOT EXISTS (
                      SELECT 1 FROM webhook_pending q
                      WHERE q.endpoint_id = p.endpoint_id AND q.uid = p.uid AND q.event_id < p.event_id)
                ORDER BY p.due_at, p.event_id
                LIMIT \(max(1, min(limit, 1000)))
                FOR NO KEY UPDATE OF p SKIP LOCKED
            ),
            claimed AS (
                UPDATE webhook_pending p
                SET due_at = now() + \(leaseMilliseconds) * interval '1 millisecond', attempts = p.attempts + 1,
                    claim = \(claim)::uuid
                FROM due WHERE p.endpoint_id = due.endpoint_id AND p.event_id = due.event_id
                RETURNING p.endpoint_id, p.event_id, p.attempts, p.queued_at
            )
            SELECT c.endpoint_id, w.url, w.secret, o.event_id, o.type, o.uid, o.created_at, \(unsafeSQL: Self.data), c.attempts,
                   c.queued_at
            FROM claimed c
            JOIN webhook_endpoints w ON w.endpoint_id = c.endpoint_id
            JOIN webhook_outbox o ON o.event_id = c.event_id
            ORDER BY o.event_id
            """
        ).map { row in
            let (endpointId, url, secret, eventId, type, uid, createdAt, data, attempt, queuedAt) = try row.decode(
                (Int64, String, String, Int64, String, String, Date, String, Int, Date).self)
            guard let type = WebhookEventType(rawValue: type) else {
                throw PostgresError(code: .decoding, message: "webhook event \(eventId) has type \(type)")
            }
            return WebhookDelivery(
                endpointId: endpointId, url: url, secret: secret,
                event: WebhookEvent(eventId: eventId, type: type, uid: uid, createdAt: createdAt, dataJSON: data),
                attempt: attempt, queuedAt: queuedAt, claim: claim)
        }
    }

    /// What recording an attempt decided.
    public enum Recorded: Sendable, Equatable {
        case delivered
        /// Tried again at the time given.
        case retrying(at: Date)
        /// Past the give-up window: no more attempts.
        case gaveUp
        /// Another worker's claim replaced this one (this one's lease ran out); only the attempt was kept.
        case superseded
    }

    /// Records an attempt: a delivery takes the event off the endpoint's queue; a failure schedules the
    /// next attempt after `retryAfter`, or gives up when the next attempt would fall past the give-up
    /// window from when the event was queued. Counts the endpoint's failures in a row and marks it
    /// failing at ``failingThreshold``.
    public func record(
        _ result: WebhookAttemptResult, of delivery: WebhookDelivery, retryAfter: Duration, giveUpAfter: Duration
    ) async throws -> Recorded {
        let error = result.error.map { String($0.unicodeScalars.filter { !Self.isControl($0) }.prefix(500)) }
        let durationMs = Int(min(max(result.duration.seconds * 1000, 0), 86_400_000).rounded())
        let delivered = result.outcome == .delivered
        let retryMs = Int64(retryAfter.seconds * 1000)
        let giveUpMs = Int64(giveUpAfter.seconds * 1000)
        // One transaction: the outcome, then (a new statement, so it sees an event whose transaction
        // the DELETE waited for) the promotion of the user's next queued event to due.
        let (removed, retryAt) = try await client.withTransaction { connection in
            let row = try await connection.query(
                """
                WITH target AS (
                    SELECT endpoint_id, event_id, claim = \(delivery.claim)::uuid AS mine,
                           now() + \(retryMs) * interval '1 millisecond'
                               > queued_at + \(giveUpMs) * interval '1 millisecond' AS past_window
                    FROM webhook_pending
                    WHERE endpoint_id = \(delivery.endpointId) AND event_id = \(delivery.event.eventId)
                    FOR UPDATE
                ),
                gone AS (
                    DELETE FROM webhook_pending p USING target t
                    WHERE p.endpoint_id = t.endpoint_id AND p.event_id = t.event_id
                      AND (\(delivered) OR (t.mine AND t.past_window))
                    RETURNING p.event_id
                ),
                retry AS (
                    UPDATE webhook_pending p SET due_at = now() + \(retryMs) * interval '1 millisecond', claim = NULL
                    FROM target t
                    WHERE p.endpoint_id = t.endpoint_id AND p.event_id = t.event_id
                      AND NOT \(delivered) AND t.mine AND NOT t.past_window
                    RETURNING p.due_at
                ),
                attempt AS (
                    INSERT INTO webhook_attempts (endpoint_id, event_id, attempt, started_at, duration_ms, status_code,
                        error, outcome)
                    VALUES (\(delivery.endpointId), \(delivery.event.eventId), \(delivery.attempt),
                        \(result.startedAt)::timestamptz, \(durationMs), \(result.statusCode)::integer, \(error)::text,
                        CASE WHEN \(delivered) THEN 'delivered'
                             WHEN EXISTS (SELECT 1 FROM gone) THEN 'gave_up' ELSE 'failed' END)
                ),
                endpoint AS (
                    UPDATE webhook_endpoints
                    SET consecutive_failures = CASE WHEN \(delivered) THEN 0 ELSE consecutive_failures + 1 END,
                        failing_since = CASE WHEN \(delivered) THEN NULL
                                             WHEN consecutive_failures + 1 >= \(Self.failingThreshold)
                                             THEN coalesce(failing_since, now()) ELSE failing_since END,
                        last_delivered_at = CASE WHEN \(delivered) THEN now() ELSE last_delivered_at END
                    WHERE endpoint_id = \(delivery.endpointId)
                )
                SELECT EXISTS (SELECT 1 FROM gone), (SELECT due_at FROM retry)
                """
            ).single()
            let (removed, retryAt) = try row.decode((Bool, Date?).self)
            if removed {
                try await connection.execute(
                    """
                    UPDATE webhook_pending p SET due_at = now()
                    FROM (
                        SELECT endpoint_id, event_id FROM webhook_pending
                        WHERE endpoint_id = \(delivery.endpointId) AND uid = \(delivery.event.uid)::text
                        ORDER BY event_id LIMIT 1
                    ) AS head
                    WHERE p.endpoint_id = head.endpoint_id AND p.event_id = head.event_id AND p.due_at = 'infinity'
                    """)
            }
            return (removed, retryAt)
        }
        if delivered { return .delivered }
        if removed { return .gaveUp }
        if let retryAt { return .retrying(at: retryAt) }
        return .superseded
    }
}
